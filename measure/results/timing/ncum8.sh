set -x
python .gpuwork/drive.py  # unpack only (EXTRA empty)
export PYTHONPATH=/tmp/site:$PWD TILELANG_CACHE_DIR=/tmp/tlc COURSE_GIT_COMMIT=$(cat .gpuwork/COMMIT)
timeout 400 ncu --clock-control none -k main_kernel -c 3 --section SpeedOfLight --section WarpStateStats --section SchedulerStats --section Occupancy --section LaunchStats --csv --page details python .gpuwork/ncum8.py > $OUT/ncum8.csv 2> $OUT/ncum8.err
echo rc=$?; tail -8 $OUT/ncum8.err; grep -c "" $OUT/ncum8.csv
