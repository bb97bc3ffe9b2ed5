set -x
python .gpuwork/drive.py  # unpack only (EXTRA empty)
export PYTHONPATH=/tmp/site:$PWD TILELANG_CACHE_DIR=/tmp/tlc COURSE_GIT_COMMIT=$(cat .gpuwork/COMMIT)
timeout 300 ncu --clock-control none -k main_kernel -c 3 --section SpeedOfLight --section WarpStateStats --section SchedulerStats --section Occupancy --csv --page details python .gpuwork/ncuden.py > $OUT/ncuden.csv 2> $OUT/ncuden.err
echo rc=$?; tail -5 $OUT/ncuden.err; grep -c "" $OUT/ncuden.csv
