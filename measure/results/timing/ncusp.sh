# Run after the driver has unpacked the bundle and the cache (e.g. `EXTRA=sk6 python .gpuwork/drive.py; bash .gpuwork/ncusp.sh`).
export PYTHONPATH=/tmp/site:$PWD TILELANG_CACHE_DIR=/tmp/tlc COURSE_GIT_COMMIT=$(cat .gpuwork/COMMIT)
timeout 150 ncu --clock-control none -k regex:"^main" -c 3 --section SpeedOfLight --section WarpStateStats --section SchedulerStats --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis --section Occupancy --section LaunchStats --section InstructionStats --page raw --csv python .gpuwork/ncusp.py > $OUT/ncusp.csv 2> $OUT/ncusp.err
echo rc=$?; tail -5 $OUT/ncusp.err; grep -c "" $OUT/ncusp.csv
for k in main_kernel main_spread_kernel; do
  timeout 90 ncu --clock-control none -k $k -c 1 --section SourceCounters --section WarpStateStats -o $OUT/ncusp-$k python .gpuwork/ncusp.py > /dev/null 2>&1
  timeout 60 ncu -i $OUT/ncusp-$k.ncu-rep --page source --csv --print-source sass > $OUT/ncusp-$k-sass.csv 2> $OUT/ncusp-$k-sass.err
  echo $k rc=$?; tail -3 $OUT/ncusp-$k-sass.err; grep -c "" $OUT/ncusp-$k-sass.csv; rm -f $OUT/ncusp-$k.ncu-rep
done
