"""sk8h: sk8's two forms that matter, on the H200 (sk8 itself ran on an H100).

``gemm.flush`` took sk8's winner (six stages, ``share``) as its stream-K form from a run on an H100; on the H200 the
records still show the five-stage form.  This probe times the two side by side on the H200 with the full-wave tile
and cuBLAS: one write-flush and one clean-flush search of 7 alternating rounds, the same checks and timeline as
sk8 (its ``main`` with a subset), and the six-stage form checked on one small plan first."""
import sys
import sk8

SK = [sk8.SK[0], sk8.SK[2]]  # five stages (the form runs 69-72 recorded), six stages with ``share``
EXTRA_PLANS = sk8.EXTRA_PLANS[:1]
MODES = ("write", "clean")

if __name__ == "__main__":
    sk8.main(sys.argv[1], SK, EXTRA_PLANS, MODES)
