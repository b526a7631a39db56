"""Find English prose in text meant to be Chinese (issue 19's measure): the words left once code,
identifiers, numbers, commands and the terms Chinese practitioners keep in English are set aside.

    english_words("损失为 -0.75：`d loss` 不对", kata_names) -> []
    english_words("largest difference 1 at [0]", set())    -> ["largest", "difference", "at"]
"""

import ast
import re
import tomllib
from pathlib import Path

GLOSSARY = tomllib.loads(
    (Path(__file__).resolve().parent.parent / "katas" / "glossary.toml").read_text(encoding="utf-8")
)
HAN = "\u3400-\u4dbf\u4e00-\u9fff"  # Chinese characters
HALF_WIDTH = re.escape(GLOSSARY["punctuation"]["half_width"])
CRAMPED = re.compile(f"[{HAN}][{HALF_WIDTH}]|[{HALF_WIDTH}][{HAN}]")  # a half-width mark beside Chinese

# Terms kept in English in Chinese text (katas/glossary.toml and the style rules), and units.
KEPT = {
    "TODO",
    "TODOs",
    "token",
    "tokens",
    "rollout",
    "rollouts",
    "detach",
    "NaN",
    "nan",
    "inf",
    "KL",
    "GRPO",
    "DPO",
    "PPO",
    "GAE",
    "SFT",
    "RLOO",
    "DAPO",
    "GSPO",
    "IPO",
    "RLVR",
    "RL",
    "RLHF",
    "TRL",
    "LoRA",
    "GPU",
    "CPU",
    "CUDA",
    "JSON",
    "CSV",
    "HTML",
    "eps",
    "beta",
    "Python",
    "PyTorch",
    "torch",
    "dtype",
    "ValueError",
    "TypeError",
    "RuntimeError",
    "NotImplementedError",
    "SyntaxError",
    "IndentationError",
    "MemoryError",
    "SystemExit",
    "AssertionError",
    "bwrap",
    "fork",
    "kata",
    "katas",
    "pytest",
    "Tensor",
    "tensor",
    "float",
    "int",
    "bool",
    "str",
    "list",
    "tuple",
    "dict",
    "None",
    "True",
    "False",
    "id",
    "ids",
    "logits",
    "softmax",
    "sigmoid",
    "logsigmoid",
    "reshape",
    "GiB",
    "MB",
    "KB",
    "ms",
    "SmolLM2",
    "Instruct",
    "Gradescope",
    "LLM",
    "AdamW",
    "Adam",
    "gguf",
    "GGUF",
    "k1",
    "k2",
    "k3",
    "Bradley",
    "Terry",
    "REINFORCE",
    "Dr",
    "clip-higher",
    "Clip-Higher",
    "Bradley-Terry",
    "GPT",
    "SLiC",
    "Azar",
    "BT",
    "Schulman",  # authors cited (Yu 等，2025)
    "Yu",
    "Zheng",
    "Rafailov",
    "Ahmadian",
    "Shao",
    "Pardo",
    "Williams",
    "DeepSeekMath",
    "DeepSeek",
    "Qwen",
    "vLLM",
    "verl",
    "OpenRLHF",
    "CS336",
    "HF",
    "Jupyter",  # where learners already work (issue 32)
    "Colab",
    "KTO",  # issue 33: the kto_loss kata and the authors it cites
    "Ethayarajh",
    "Kahneman",
    "Tversky",
}
# Formula notation, not prose: the function names of the lessons' math; and technical abbreviations
KEPT |= {"log", "exp", "max", "min", "mean", "sum", "std", "var", "grad", "delta", "pi", "logit", "log-sigmoid", "sqrt"}
KEPT |= {"rho", "epsilon", "gamma", "lam", "lambda", "NLL", "TD", "BERT", "CLS", "nats", "log-softmax", "z-score"}
KEPT |= {"SimPO", "ORPO", "CPO", "CPO-SimPO", "CPOTrainer", "CPOConfig", "ORPOTrainer", "Meng", "Hong", "Maechler"}
# the lora kata: its library and the authors it cites
KEPT |= {"peft", "rsLoRA", "Kaiming", "ReLU", "Hu", "Kalajdzievski"}
# sampling: the knobs and the tools by their names
KEPT |= {"top-k", "top-p", "min-p", "transformers", "warper", "dropout", "generate", "vLLM", "SGLang", "TIS"}
# sft_data: the end-of-sequence token by its name
KEPT |= {"EOS"}
# the distillation kata: GKD, the divergence, the authors and the lab it cites
KEPT |= {"GKD", "JSD", "Jensen-Shannon", "tau", "Agarwal", "Hinton", "Lu", "Thinking", "Machines", "Lab"}
PASSED_LINE = re.compile(r"^\d+ passed, \d+ failed$", re.MULTILINE)  # the report's machine-readable last line
RAISED = re.compile(r"\b[A-Z]\w*(Error|Exception): .*$", re.MULTILINE)  # an exception's own message, as raised
REPR = re.compile(r"'[^'\n]*'")  # a Python string shown as data (a call's argument, a value)
TAG = re.compile(r"</?\w+>")  # a token or a tag: <bos>, <answer>
QUOTED = re.compile(r"“[\x00-\x7f…]*”")  # an English string quoted as data (a model's answer “The answer is 42”)
GLOSS = re.compile(r"[\u4e00-\u9fff]（[A-Za-z][A-Za-z .'-]*）")  # 填充（padding）: the English term beside the Chinese
CODE = re.compile(r"`[^`\n]*`")
OPTION = re.compile(r"(?<![\w-])--?[A-Za-z][\w-]*")  # --force, -k
COMMAND = re.compile(r"\b(kata|pytest|nox|pip|python)( [-\w./=:@]+)+")
PATHLIKE = re.compile(r"[\w.~-]*[/\\][^\s，。；：（）]*|\S+\.(py|json|csv|toml|md|html|txt)\b")
SLUGLIKE = re.compile(r"\b[a-z0-9]+(-[a-z0-9]+){2,}\b")  # ids such as pt-grpo-real-model-update
IDENTIFIER = re.compile(r"\b[A-Za-z_][\w.]*(\(|_|\.|\d)[\w.()\[\]=,]*")  # snake_case, dotted, calls, digits
WORD = re.compile(r"[A-Za-z][A-Za-z'’-]*[A-Za-z]")


def english_words(text: str, names: set[str] = frozenset()) -> list[str]:
    """The English words of `text` outside code spans, commands, options, paths and identifiers that are
    neither kept terms nor `names` (the kata's own identifiers). Single letters are variables."""
    for pattern in (
        PASSED_LINE,
        RAISED,
        REPR,
        TAG,
        QUOTED,
        GLOSS,
        CODE,
        COMMAND,
        OPTION,
        PATHLIKE,
        SLUGLIKE,
        IDENTIFIER,
    ):
        text = pattern.sub(" ", text)
    return [word for word in WORD.findall(text) if word not in KEPT and word not in names]


def code_names(source: str, constants: bool = True) -> set[str]:
    """Every identifier of a Python source, and (with `constants`) its identifier-like strings."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Name):
            names.add(node.id)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, ast.FunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Attribute):
            names.add(node.attr)
        elif isinstance(node, ast.keyword) and node.arg:
            names.add(node.arg)
        elif constants and isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.isidentifier():
            names.add(node.value)
    return names
