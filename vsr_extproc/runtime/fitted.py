"""Fitted text models kept on disk between starts.

The jailbreak and safety models are fitted each time a policy compiles: seconds of
L-BFGS-B on every start, every reload and every ``vsr-extproc validate``. A fitted model
is kept (``$VSR_CACHE_DIR/fitted``, default ``~/.cache/vsr-extproc/fitted``) under a
digest of everything its fit reads: its kind, the texts it is fitted on, the text
encoder's fingerprint (weights, precision, runtime), the versions of numpy, scipy and
scikit-learn, and the source and banks of this package. A change to any of them fits
afresh; the same inputs read back the same coefficients, so a model read back scores
every text as the one fitted.

The files are skops archives (no pickle: reading one builds only the types skops trusts,
numpy arrays, scikit-learn's estimators and Python's containers; any other type makes the
file a miss), with each vectoriser's vocabulary beside it as a JSON list (skops read the
safety model's 39,000-term dictionary in 0.8 s; orjson and a dict comprehension read it in
13-16 ms). A file that cannot be read or written is a miss: the model is fitted as it
would be without a cache.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import io
import zipfile
from collections.abc import Callable, Mapping, Set
from typing import Any, TypeVar

import orjson
import structlog

from vsr_extproc.runtime.cache import cache_folder, keep, source_digest, used

log = structlog.get_logger(__name__)

M = TypeVar("M")

#: fitted models kept of each kind (each about 10 MB): every change to the package's source
#: fits them anew, and a few configs' banks may be in use at once
KEPT = 8


def _libraries() -> str:
    import numpy
    import scipy
    import sklearn

    return f"numpy {numpy.__version__}|scipy {scipy.__version__}|sklearn {sklearn.__version__}"


def _feed(digest: Any, value: Any) -> None:
    """Feed ``value`` (strings, numbers, and sequences, sets and mappings of them) to
    ``digest``, each with its type and length so that no two values feed the same bytes."""
    if isinstance(value, str):
        data = value.encode("utf-8", "surrogatepass")
        digest.update(b"s%d:" % len(data) + data)
    elif isinstance(value, bool | int | float) or value is None:
        digest.update(b"n" + repr(value).encode() + b";")
    elif isinstance(value, Mapping):  # in its order: a bank's categories are the model's
        digest.update(b"m%d:" % len(value))
        for key, item in value.items():
            _feed(digest, key)
            _feed(digest, item)
    elif isinstance(value, Set):
        digest.update(b"u%d:" % len(value))
        for item in sorted(value, key=repr):
            _feed(digest, item)
    elif isinstance(value, list | tuple):
        digest.update(b"l%d:" % len(value))
        for item in value:
            _feed(digest, item)
    else:
        raise TypeError(f"cannot key a fitted model by a {type(value).__name__}")


def fitted_key(kind: str, encoder: str, inputs: Any) -> str:
    """The digest a fitted model is kept under (see the module's docstring)."""
    digest = hashlib.sha256()
    for part in (kind, encoder, _libraries(), source_digest()):
        _feed(digest, part)
    _feed(digest, inputs)
    return digest.hexdigest()[:32]


def kept_model(cls: type[M], kind: str, encoder: str, inputs: Any, fit: Callable[[], M]) -> M:
    """The model of dataclass ``cls`` that ``fit()`` returns for ``inputs`` with the text
    encoder of fingerprint ``encoder``, read back from disk where a process fitted it
    before. Its fields that take part in comparisons are kept; the others (caches) start
    empty, as a fitted model's do."""
    path = cache_folder() / "fitted" / kind / f"{fitted_key(kind, encoder, inputs)}.zip"
    if path.exists():
        try:
            model = cls(**_read(path.read_bytes()))
            used(path)
            return model
        except Exception as exc:  # a damaged, partial or untrusted file: fit afresh
            log.warning("fitted_model_unreadable", kind=kind, path=str(path), error=repr(exc))
    model = fit()
    if not dataclasses.is_dataclass(model):
        raise TypeError(f"{kind}: a kept model must be a dataclass")
    state = {f.name: getattr(model, f.name) for f in dataclasses.fields(model) if f.compare}
    keep(path, lambda partial: partial.write_bytes(_written(state)), most=KEPT)
    return model


def _written(state: dict[str, Any]) -> bytes:
    """``state`` as a zip: the skops archive, and each vectoriser's vocabulary (its terms
    in column order) taken out of it into JSON."""
    import skops.io

    vocabularies: dict[str, list[str]] = {}
    kept: dict[str, Any] = {}
    for name, value in state.items():
        vocabulary = getattr(value, "vocabulary_", None)
        if isinstance(vocabulary, dict):
            terms = [""] * len(vocabulary)
            for term, column in vocabulary.items():
                terms[column] = term
            vocabularies[name] = terms
            value = copy.copy(value)
            del value.vocabulary_
        kept[name] = value
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as archive:
        archive.writestr("state.skops", skops.io.dumps(kept))
        archive.writestr("vocabularies.json", orjson.dumps(vocabularies))
    return buffer.getvalue()


def _read(data: bytes) -> dict[str, Any]:
    import skops.io

    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        # only the types skops trusts by default: numpy arrays, scikit-learn's estimators,
        # Python's containers; any other type raises before anything is built
        state: dict[str, Any] = skops.io.loads(archive.read("state.skops"))
        vocabularies = orjson.loads(archive.read("vocabularies.json"))
    for name, terms in vocabularies.items():
        state[name].vocabulary_ = {term: column for column, term in enumerate(terms)}
    return state
