from kernels.runner import main
import sys

sys.exit(main())
