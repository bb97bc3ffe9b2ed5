set -x
EXTRA=wpost XLIMIT=420 python .gpuwork/drive.py 2>&1 | grep -v INFO | grep -v "^\s*$" | tail -30
export PYTHONPATH=/tmp/site:$PWD TILELANG_CACHE_DIR=/tmp/tlc COURSE_GIT_COMMIT=$(cat .gpuwork/COMMIT)
timeout 75 ncu --clock-control none -k main_kernel -c 3 --section WarpStateStats --section SourceCounters --section SchedulerStats --section SpeedOfLight --page raw --csv python .gpuwork/ncustall.py > $OUT/ncustall.csv 2> $OUT/ncustall.err
echo rc=$?; tail -5 $OUT/ncustall.err; grep -c "" $OUT/ncustall.csv
timeout 45 ncu --clock-control none -k main_kernel -c 1 --section SourceCounters --section WarpStateStats -o $OUT/ncustall python .gpuwork/ncustall.py > /dev/null 2>&1
timeout 30 ncu -i $OUT/ncustall.ncu-rep --page source --csv --print-source sass > $OUT/ncustall-sass.csv 2> $OUT/ncustall-sass.err
echo rc=$?; tail -3 $OUT/ncustall-sass.err; grep -c "" $OUT/ncustall-sass.csv
