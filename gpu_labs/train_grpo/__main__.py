"""`python -m gpu_labs.train_grpo ...`, also under torchrun and `accelerate launch` (see gpu_labs.train_grpo).

The package is imported once, as gpu_labs.train_grpo; this file runs its command line.
"""

import sys

from gpu_labs.train_grpo.script import main

sys.exit(main())
