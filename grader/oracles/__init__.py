"""Other code as the source of expected values (`kata check SLUG --against trl`):

- against: which katas an oracle can grade, and whether it is installed (light: no torch, no trl);
- trl_oracle: TRL's own code behind the reference functions' signatures.
"""
