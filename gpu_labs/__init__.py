"""Real-model labs (GRPO mechanism, RLVR delivery, GRPO training). Not built yet: see the labs issue."""
