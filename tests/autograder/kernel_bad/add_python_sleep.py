# Known-bad (elementwise K1): sleeps in the answer cell (would stall a grader without limits).
import time

time.sleep(3600)
ANSWER["k1_add"] = None
