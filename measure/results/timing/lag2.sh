EXTRA=lag2 XLIMIT=330 python .gpuwork/drive.py 2>&1 | grep -v INFO | grep -v "^  search"
export PYTHONPATH=/tmp/site:$PWD TILELANG_CACHE_DIR=/tmp/tlc COURSE_GIT_COMMIT=$(cat .gpuwork/COMMIT)
timeout 150 ncu --clock-control none -k main_kernel -c 2 --section SpeedOfLight --section WarpStateStats --section SchedulerStats --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis --section Occupancy --section LaunchStats --section InstructionStats --page raw --csv python .gpuwork/nculag.py > $OUT/nculag.csv 2> $OUT/nculag.err
echo rc=$?; tail -5 $OUT/nculag.err; grep -c "" $OUT/nculag.csv
