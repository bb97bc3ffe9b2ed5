# Run after the driver has unpacked the bundle and the cache (e.g. `EXTRA=sk8 python .gpuwork/drive.py; bash .gpuwork/ncu64b.sh`).
export PYTHONPATH=/tmp/site:$PWD TILELANG_CACHE_DIR=/tmp/tlc COURSE_GIT_COMMIT=$(cat .gpuwork/COMMIT)
timeout 120 ncu --clock-control none -k main_kernel -c 1 --section SpeedOfLight --section WarpStateStats --section SchedulerStats --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis --section Occupancy --section LaunchStats --section InstructionStats --page raw --csv python .gpuwork/ncu64b.py > $OUT/ncu64b.csv 2> $OUT/ncu64b.err
echo rc=$?; tail -5 $OUT/ncu64b.err; grep -c "" $OUT/ncu64b.csv
timeout 90 ncu --clock-control none -k main_kernel -c 1 --section SourceCounters --section WarpStateStats -o $OUT/ncu64b python .gpuwork/ncu64b.py > /dev/null 2>&1
timeout 60 ncu -i $OUT/ncu64b.ncu-rep --page source --csv --print-source sass > $OUT/ncu64b-sass.csv 2> $OUT/ncu64b-sass.err
echo rc=$?; tail -3 $OUT/ncu64b-sass.err; grep -c "" $OUT/ncu64b-sass.csv; rm -f $OUT/ncu64b.ncu-rep
