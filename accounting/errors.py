"""Errors a user can cause. Each carries the offending field so the CLI can say one clear sentence."""


class ConfigurationError(ValueError):
    """A parameter is invalid. ``field`` names it; the message is one sentence."""

    def __init__(self, field: str, message: str):
        self.field = field
        super().__init__(f"{field}: {message}")


def _short(value, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def require_number(field: str, value, *, low=None, high=None, low_open=False, high_open=False,
                   integer=False) -> float:
    """Validate a real number (or integer) within bounds, raising ConfigurationError naming ``field``."""
    if isinstance(value, bool):
        raise ConfigurationError(field, f"expected a number, got {value!r}")
    try:
        number = float(value)
    except OverflowError:  # an integer beyond the float range
        raise ConfigurationError(field, f"must be finite, got a number of {len(str(value))} digits") from None
    except (TypeError, ValueError):
        raise ConfigurationError(field, f"expected a number, got {_short(value)}") from None
    if number != number or number in (float("inf"), float("-inf")):
        raise ConfigurationError(field, f"must be finite, got {value!r}")
    if integer:
        if number != int(number):
            raise ConfigurationError(field, f"must be a whole number, got {value!r}")
        number = int(number)
    if low is not None and (number < low or (low_open and number == low)):
        bound = f"greater than {low}" if low_open else f"at least {low}"
        raise ConfigurationError(field, f"must be {bound}, got {value!r}")
    if high is not None and (number > high or (high_open and number == high)):
        bound = f"less than {high}" if high_open else f"at most {high}"
        raise ConfigurationError(field, f"must be {bound}, got {value!r}")
    return number


def read_toml(path, field: str = "config") -> dict:
    """Parse a TOML file a user named; a missing, unreadable or malformed file becomes one
    ConfigurationError naming ``field``."""
    import tomllib

    try:
        with open(path, "rb") as handle:
            return tomllib.load(handle)
    except FileNotFoundError:
        raise ConfigurationError(field, f"file not found: {path}") from None
    except OSError as exc:
        raise ConfigurationError(field, f"cannot read {path}: {exc.strerror}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigurationError(field, f"{path} is not valid TOML: {exc}") from None
    except RecursionError:  # the parser recurses per level of nested arrays and inline tables
        raise ConfigurationError(field, f"{path} is not valid TOML: nested too deeply") from None
