"""Language identification for the ``language`` term: py3langid (langid.py's maintained fork), whose
model ships inside the package: nothing is downloaded at run time. Loaded once per process."""

from __future__ import annotations

from functools import lru_cache

from writing_rl.settings import ConfigError


@lru_cache(maxsize=8)
def identifier(languages: tuple[str, ...] = (), prefix: str = "reward.reward_kwargs.terms.language"):
    try:
        from py3langid.langid import MODEL_FILE, LanguageIdentifier
    except ImportError as err:
        raise ConfigError(f"{prefix} needs the py3langid package (pip install py3langid)") from err
    model = LanguageIdentifier.from_model_file(MODEL_FILE)
    if languages:
        unknown = sorted(set(languages) - set(model.nb_classes))
        if unknown:
            raise ConfigError(
                f"{prefix}.languages: {unknown} not among the identifier's codes {sorted(model.nb_classes)}"
            )
        model.set_languages(list(languages))
    return model


def identify(text: str, languages: tuple[str, ...] = ()) -> str:
    """The ISO 639-1 code of ``text``'s language."""
    return identifier(languages).classify(text)[0]
