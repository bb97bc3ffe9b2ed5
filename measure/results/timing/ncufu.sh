python .gpuwork/drive.py 2>&1 | grep -v INFO
export PYTHONPATH=/tmp/site:$PWD TILELANG_CACHE_DIR=/tmp/tlc COURSE_GIT_COMMIT=$(cat .gpuwork/COMMIT)
timeout 200 ncu --clock-control none -k main_kernel -c 4 --section SpeedOfLight --section WarpStateStats --section SchedulerStats --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis --section MemoryWorkloadAnalysis_Tables --section Occupancy --section LaunchStats --section InstructionStats --page raw --csv python .gpuwork/ncufu.py > $OUT/ncufu.csv 2> $OUT/ncufu.err
echo rc=$?; tail -5 $OUT/ncufu.err; grep -c "" $OUT/ncufu.csv
