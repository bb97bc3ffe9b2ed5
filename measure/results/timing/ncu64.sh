python .gpuwork/drive.py > /dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD TILELANG_CACHE_DIR=/tmp/tlc COURSE_GIT_COMMIT=$(cat .gpuwork/COMMIT)
timeout 150 ncu --clock-control none -k main_kernel -c 2 --section SpeedOfLight --section WarpStateStats --section SchedulerStats --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis --section Occupancy --section LaunchStats --section InstructionStats --page raw --csv python .gpuwork/ncu64.py > $OUT/ncu64.csv 2> $OUT/ncu64.err
echo rc=$?; tail -5 $OUT/ncu64.err; grep -c "" $OUT/ncu64.csv
timeout 90 ncu --clock-control none -k main_kernel -c 1 --section SourceCounters --section WarpStateStats -o $OUT/ncu64 python .gpuwork/ncu64.py > /dev/null 2>&1
timeout 60 ncu -i $OUT/ncu64.ncu-rep --page source --csv --print-source sass > $OUT/ncu64-sass.csv 2> $OUT/ncu64-sass.err
echo rc=$?; tail -3 $OUT/ncu64-sass.err; grep -c "" $OUT/ncu64-sass.csv; rm -f $OUT/ncu64.ncu-rep
