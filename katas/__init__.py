"""One folder per kata: kata.toml (metadata), lesson.en.md / lesson.zh.md, checks.py, misconceptions.toml."""
