"""The shapes of a video case file and of the eval's `config.yaml`, validated with pydantic.

`parse_case_file` / `parse_eval_config_file` turn a parsed YAML mapping into these models or raise one
message listing every problem as `<path>: invalid schema: <loc>: <msg>; ...` (GlassKit's wording).
"""

from __future__ import annotations

import datetime
import functools
import math
import re
from collections.abc import Mapping
from typing import Annotated, Any, Callable, TypeVar
from urllib.parse import urlsplit

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    WrapValidator,
    field_validator,
    model_validator,
)

from assay.core.bounded_input import date_hint, describe_value
from assay.core.format import join_first
from assay.core.jsonvalue import check_json_like
from assay.errors import AssayError, CaseError, ConfigError, JsonValueError
from assay.video.model import COMPARE_MODES, DEFAULT_EVERY_S

__all__ = [
    "RawCaseFile",
    "RawCompare",
    "RawEvalConfigFile",
    "RawRemoteVideo",
    "RawSampleBlock",
    "RawSampleDefaults",
    "RawTarget",
    "RawTargetThreshold",
    "RawThresholds",
    "RawVideoStore",
    "RawWorkflow",
    "RawWorkflowTarget",
    "format_validation_error",
    "parse_case_file",
    "parse_eval_config_file",
    "parse_number",
]

_SHA256_PATTERN = re.compile(r"[0-9a-f]{64}")
_ENV_NAME_PATTERN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def parse_number(
    value: Any,
    *,
    label: str,
    minimum: float | None = None,
    maximum: float | None = None,
    exclusive_minimum: bool = False,
) -> float:
    """GlassKit's number rule: bools rejected, anything `float()` takes accepted (so `"1.5"` too)."""
    if isinstance(value, bool):
        raise ValueError(f"{label} must be a number")
    try:
        number = float(value)
    except OverflowError:
        # An integer too large for a float is as unusable as infinity.
        raise ValueError(f"{label} must be finite") from None
    except (TypeError, ValueError):
        raise ValueError(f"{label} must be a number") from None
    if not math.isfinite(number):
        raise ValueError(f"{label} must be finite")
    if minimum is not None:
        if exclusive_minimum and number <= minimum:
            raise ValueError(f"{label} must be greater than {minimum:g}")
        if not exclusive_minimum and number < minimum:
            raise ValueError(f"{label} must be greater than or equal to {minimum:g}")
    if maximum is not None and number > maximum:
        raise ValueError(f"{label} must be less than or equal to {maximum:g}")
    return number


def _check_unicode(value: str) -> None:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("must contain valid Unicode scalar values") from None


def _clean_text(value: str | None) -> str | None:
    if value is None:
        return None
    stripped = value.strip()
    if not stripped:
        raise ValueError("must not be empty")
    _check_unicode(stripped)
    return stripped


def _quote_key_hint(key: Any) -> str:
    """The fix for a key YAML did not read as text (`on:`, `yes:` and `true:` are all the boolean true)."""
    if isinstance(key, bool):
        written = ("on, yes or true", "on") if key else ("off, no or false", "off")
        return f"; YAML reads an unquoted {written[0]} as a boolean: quote the key as you wrote it, e.g. \"{written[1]}\""
    return f"; quote the key (\"{key}\") to keep it as text"


def _check_mapping_keys(value: Mapping[Any, Any], *, label: str) -> None:
    for key in value:
        if not isinstance(key, str):
            raise ValueError(f"{label} keys must be strings")
        if not key.strip():
            raise ValueError(f"{label} keys must not be empty")
        if key != key.strip():
            raise ValueError(f"{label} keys must not have surrounding whitespace")
        _check_unicode(key)


def _min_pass_rate(value: Any) -> float | None:
    if value is None:
        return None
    return parse_number(value, label="min_pass_rate", minimum=0.0, maximum=1.0)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", loc_by_alias=True, populate_by_name=True)


class RawCompare(_Strict):
    mode: str | None = None
    tolerance: float | None = None

    @field_validator("mode")
    @classmethod
    def _check_mode(cls, value: str | None) -> str | None:
        # Stripped and non-empty (a blank mode "must not be empty", as GlassKit says), then one of the modes.
        mode = _clean_text(value)
        if mode is not None and mode not in COMPARE_MODES:
            expected = ", ".join(sorted(COMPARE_MODES))
            raise ValueError(f"unsupported compare mode {mode!r}; expected one of: {expected}")
        return mode

    @field_validator("tolerance", mode="before")
    @classmethod
    def _check_tolerance(cls, value: Any) -> float | None:
        if value is None:
            return None
        return parse_number(value, label="tolerance", minimum=0.0)


class RawSampleDefaults(_Strict):
    """`{field?, compare?}`; which keys were written is `model_fields_set` (null clears inheritance)."""

    field: str | None = None
    compare: RawCompare | None = None

    @field_validator("field")
    @classmethod
    def _check_field(cls, value: str | None) -> str | None:
        return _clean_text(value)


class RawSampling(_Strict):
    every_s: float = DEFAULT_EVERY_S

    @field_validator("every_s", mode="before")
    @classmethod
    def _check_every_s(cls, value: Any) -> float:
        return parse_number(value, label="every_s", minimum=0.0, exclusive_minimum=True)


class RawSampleBlock(_Strict):
    """One entry of `targets.<id>.samples`; `has_expectation` is whether `expect` was written."""

    range_: list[float] | None = Field(default=None, alias="range")
    at: float | list[float] | None = None
    expect: Any = None
    every_s: float | None = None
    field: str | None = None
    compare: RawCompare | None = None
    comment: str | None = None
    ignore: str | None = None

    @property
    def has_expectation(self) -> bool:
        return "expect" in self.model_fields_set

    @field_validator("expect")
    @classmethod
    def _check_expect(cls, value: Any) -> Any:
        try:
            check_json_like(value, "expect")
        except JsonValueError as error:
            raise ValueError(f"{error}{_quote_key_hint(error.key) if error.key is not None else ''}") from None
        return value

    @field_validator("range_", mode="before")
    @classmethod
    def _check_range(cls, value: Any) -> list[float] | None:
        if value is None:
            return None
        if not isinstance(value, (list, tuple)) or len(value) != 2:
            raise ValueError("must be [start, end]")
        start = parse_number(value[0], label="range start", minimum=0.0)
        end = parse_number(value[1], label="range end", minimum=0.0)
        if end <= start:
            raise ValueError("end must be greater than start")
        return [start, end]

    @field_validator("at", mode="before")
    @classmethod
    def _check_at(cls, value: Any) -> float | list[float] | None:
        if value is None:
            return None
        if isinstance(value, (list, tuple)):
            if not value:
                raise ValueError("must contain at least one timestamp")
            return [parse_number(item, label="at", minimum=0.0) for item in value]
        return parse_number(value, label="at", minimum=0.0)

    @field_validator("every_s", mode="before")
    @classmethod
    def _check_every_s(cls, value: Any) -> float | None:
        if value is None:
            return None
        return parse_number(value, label="every_s", minimum=0.0, exclusive_minimum=True)

    @field_validator("field", "comment", "ignore")
    @classmethod
    def _check_text(cls, value: str | None) -> str | None:
        return _clean_text(value)

    @model_validator(mode="after")
    def _check_exactly_one_location(self) -> RawSampleBlock:
        if (self.range_ is None) == (self.at is None):
            raise ValueError("must contain exactly one of range or at")
        return self

    @property
    def at_values(self) -> list[float]:
        if self.at is None:
            return []
        return self.at if isinstance(self.at, list) else [self.at]


class RawTarget(_Strict):
    label: str | None = None
    config: dict[str, Any] = Field(default_factory=dict)
    sample_defaults: RawSampleDefaults = Field(default_factory=RawSampleDefaults)
    samples: list[RawSampleBlock]

    @field_validator("label")
    @classmethod
    def _check_label(cls, value: str | None) -> str | None:
        return _clean_text(value)


class RawWorkflowTarget(BaseModel):
    """A `workflow.targets[]` entry: extra keys are target metadata, merged under the target config."""

    model_config = ConfigDict(extra="allow", loc_by_alias=True, populate_by_name=True)

    id: str
    label: str | None = None

    @field_validator("id")
    @classmethod
    def _check_id(cls, value: str | None) -> str | None:
        return _clean_text(value)

    @field_validator("label")
    @classmethod
    def _check_label(cls, value: str | None) -> str | None:
        # spec §4.4: the workflow label counts "stripped, if a non-empty string"; a blank one is no label.
        if value is None or not value.strip():
            return None
        _check_unicode(value.strip())
        return value.strip()

    @property
    def extra_metadata(self) -> dict[str, Any]:
        return dict(self.__pydantic_extra__ or {})


class RawWorkflow(_Strict):
    targets: list[RawWorkflowTarget] = Field(default_factory=list)


class RawTargetThreshold(_Strict):
    min_pass_rate: float | None = None

    @field_validator("min_pass_rate", mode="before")
    @classmethod
    def _check_min_pass_rate(cls, value: Any) -> float | None:
        return _min_pass_rate(value)


class RawThresholds(_Strict):
    min_pass_rate: float | None = None
    max_failures: int | None = None
    per_target: dict[str, RawTargetThreshold] = Field(default_factory=dict)

    @field_validator("min_pass_rate", mode="before")
    @classmethod
    def _check_min_pass_rate(cls, value: Any) -> float | None:
        return _min_pass_rate(value)

    @field_validator("max_failures", mode="before")
    @classmethod
    def _check_max_failures(cls, value: Any) -> int | None:
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError("must be an integer")
        if value < 0:
            raise ValueError("must be greater than or equal to 0")
        return value

    @field_validator("per_target")
    @classmethod
    def _check_per_target_ids(cls, value: dict[str, RawTargetThreshold]) -> dict[str, RawTargetThreshold]:
        _check_mapping_keys(value, label="per_target")
        return value


class RawRemoteVideo(_Strict):
    store: str
    key: str
    sha256: str

    @field_validator("store", "key")
    @classmethod
    def _check_text(cls, value: str) -> str:
        return _clean_text(value)  # type: ignore[return-value]

    @field_validator("sha256")
    @classmethod
    def _check_sha256(cls, value: str) -> str:
        digest = value.strip().lower()
        if not _SHA256_PATTERN.fullmatch(digest):
            raise ValueError("must be a 64-character hexadecimal SHA-256 digest")
        return digest


def _local_path_or_remote_reference(value: Any, handler: Callable[[Any], Any]) -> Any:
    # A plain union would report every branch with tagged locations (`video.str`); validating the
    # mapping form through the handler keeps locations such as `video.sha256`.
    if isinstance(value, str):
        return _clean_text(value)
    if isinstance(value, Mapping):
        return handler(value)
    raise ValueError("must be a video path or a mapping with store, key and sha256")


VideoReference = Annotated[RawRemoteVideo, WrapValidator(_local_path_or_remote_reference)]


class RawCaseFile(_Strict):
    """A whole case file. `video` is a `str` (local path as written, stripped) or a `RawRemoteVideo`."""

    video: VideoReference
    description: str | None = None
    sampling: RawSampling = Field(default_factory=RawSampling)
    sample_defaults: RawSampleDefaults = Field(default_factory=RawSampleDefaults)
    workflow: RawWorkflow = Field(default_factory=RawWorkflow)
    targets: dict[str, RawTarget]
    thresholds: RawThresholds = Field(default_factory=RawThresholds)

    @field_validator("description")
    @classmethod
    def _check_description(cls, value: str | None) -> str | None:
        return _clean_text(value)

    @field_validator("targets")
    @classmethod
    def _check_targets(cls, value: dict[str, RawTarget]) -> dict[str, RawTarget]:
        if not value:
            raise ValueError("must contain at least one target")
        _check_mapping_keys(value, label="targets")
        return value


def _check_http_url(value: str | None, *, label: str) -> str | None:
    if value is None:
        return None
    url = value.strip()
    try:
        parts = urlsplit(url)
        hostname = parts.hostname
        has_credentials = parts.username is not None or parts.password is not None
        _ = parts.port  # raises ValueError for a malformed port
    except ValueError:
        raise ValueError(f"{label} must be an HTTP(S) URL without credentials, a query, or a fragment") from None
    if (
        parts.scheme.lower() not in ("http", "https")
        or not hostname
        or has_credentials
        or parts.query
        or parts.fragment
        or "?" in url
        or "#" in url
    ):
        raise ValueError(f"{label} must be an HTTP(S) URL without credentials, a query, or a fragment")
    return url


def _check_env_name(value: str | None, *, label: str) -> str | None:
    if value is None:
        return None
    name = value.strip()
    if not _ENV_NAME_PATTERN.fullmatch(name):
        raise ValueError(f"{label} must be an environment variable name matching [A-Za-z_][A-Za-z0-9_]*")
    return name


class RawVideoStore(_Strict):
    type: str = "s3"
    bucket: str
    endpoint_url: str | None = None
    region: str = "us-east-1"
    public_base_url: str | None = None
    access_key_id_env: str | None = None
    secret_access_key_env: str | None = None
    session_token_env: str | None = None

    @field_validator("type")
    @classmethod
    def _check_type(cls, value: str) -> str:
        if value.strip() != "s3":
            raise ValueError("type must be 's3'")
        return "s3"

    @field_validator("bucket", "region")
    @classmethod
    def _check_text(cls, value: str) -> str:
        return _clean_text(value)  # type: ignore[return-value]

    @field_validator("endpoint_url")
    @classmethod
    def _check_endpoint_url(cls, value: str | None) -> str | None:
        return _check_http_url(value, label="endpoint_url")

    @field_validator("public_base_url")
    @classmethod
    def _check_public_base_url(cls, value: str | None) -> str | None:
        url = _check_http_url(value, label="public_base_url")
        return url.rstrip("/") if url is not None else None

    @field_validator("access_key_id_env", "secret_access_key_env", "session_token_env")
    @classmethod
    def _check_env_names(cls, value: str | None, info: ValidationInfo) -> str | None:
        return _check_env_name(value, label=info.field_name or "")

    @model_validator(mode="after")
    def _check_credential_names(self) -> RawVideoStore:
        if (self.access_key_id_env is None) != (self.secret_access_key_env is None):
            raise ValueError("access_key_id_env and secret_access_key_env must be set together")
        if self.session_token_env is not None and self.access_key_id_env is None:
            raise ValueError("session_token_env requires access_key_id_env and secret_access_key_env")
        return self


class RawEvalConfigFile(_Strict):
    thresholds: RawThresholds = Field(default_factory=RawThresholds)
    video_stores: dict[str, RawVideoStore] = Field(default_factory=dict)

    @field_validator("video_stores")
    @classmethod
    def _check_store_names(cls, value: dict[str, RawVideoStore]) -> dict[str, RawVideoStore]:
        _check_mapping_keys(value, label="video_stores")
        return value


def _models() -> list[type[BaseModel]]:
    """The mappings a case file or config.yaml is made of: this module's models."""
    return [value for value in globals().values()
            if isinstance(value, type) and issubclass(value, BaseModel) and value is not BaseModel]


def _keys(model: type[BaseModel]) -> list[str]:
    return [spec.alias or name for name, spec in model.model_fields.items()]


@functools.cache
def _known_keys() -> frozenset[str]:
    """Every key a case file or config.yaml may hold, for suggesting one against a typo."""
    return frozenset(key for model in _models() for key in _keys(model))


@functools.cache
def _homes() -> dict[str, frozenset[str]]:
    """Each key of a nested mapping -> the keys that hold that mapping (`tolerance` -> {`compare`}). Only a mapping
    held directly (`compare:`, `video:`, `thresholds:`) counts: one of many under names (`video_stores:`, `targets:`)
    has a name of the user's between."""
    import types
    import typing

    holders: dict[type, set[str]] = {}
    for model in _models():
        for name, spec in model.model_fields.items():
            if typing.get_origin(spec.annotation) not in (None, typing.Union, types.UnionType):
                continue  # a dict or a list of them
            for inner in typing.get_args(spec.annotation) or (spec.annotation,):
                if isinstance(inner, type) and issubclass(inner, BaseModel):
                    holders.setdefault(inner, set()).add(spec.alias or name)
    homes: dict[str, set[str]] = {}
    for model, held_by in holders.items():
        for key in _keys(model):
            homes.setdefault(key, set()).update(held_by)
    return {key: frozenset(held) for key, held in homes.items()}


def _home_elsewhere(key: str, location: tuple[Any, ...]) -> str:
    """"`compare:`" when `key` is only ever a key of a mapping held by another key than any it was written in (a
    sample's `tolerance`, which is `compare.tolerance`), else ""."""
    held_by = _homes().get(key)
    if not held_by or key in _top_level_keys() or any(holder in location[:-1] for holder in held_by):
        return ""
    return " or ".join(f"`{name}:`" for name in sorted(held_by))


@functools.cache
def _top_level_keys() -> frozenset[str]:
    return frozenset(key for model in (RawCaseFile, RawEvalConfigFile, RawTarget, RawSampleBlock) for key in _keys(model))


def nearest_key(written: str) -> str | None:
    """The known key `written` was most likely meant to be (`expcet` → `expect`), if one is close."""
    import difflib

    found = difflib.get_close_matches(written, sorted(_known_keys()), n=1, cutoff=0.7)
    if not found and len(written) >= 3:  # a key cut short (`sha` for `sha256`), which difflib scores too low
        found = [key for key in _known_keys() if key.startswith(written)]
        found = found if len(found) == 1 else []
    return found[0] if found and found[0] != written else None


def format_validation_error(error: ValidationError) -> str:
    """Pydantic errors as `loc: msg; loc: msg` with dotted locations (`targets.t.samples.0.at`),
    the first few of them (`join_first`), then how many more."""
    return join_first(error.errors(), shown=_format_error_item)


def _format_error_item(item: Any) -> str:
    location = ".".join(str(part) for part in item["loc"])
    message = str(item["msg"])
    written = item.get("input")
    if item["type"] == "string_type" and isinstance(written, (datetime.date, datetime.time)):
        # YAML reads an unquoted 2026-01-01 as a date: say so, or "a valid string" is a riddle.
        message += f", got {describe_value(written)}{date_hint(written)}"
    elif item["type"] == "string_type" and item["loc"] and item["loc"][-1] == "[key]" and written is not None:
        # An unquoted `1:` or `true:` key: YAML reads a number or a boolean, not an id.
        message += f", got {describe_value(written)}{_quote_key_hint(written)}"
    if item["type"] == "model_type":
        # Pydantic names its class here (`or instance of RawSampleBlock`), which means nothing in a case file.
        message = f"Input should be a valid dictionary (a mapping of keys), got {describe_value(written)}"
    if item["type"] == "extra_forbidden" and item["loc"] and isinstance(item["loc"][-1], str):
        # GlassKit's wording first, then the key that was probably meant.
        written_key = item["loc"][-1]
        suggestion = nearest_key(written_key)
        if suggestion is not None:
            home = _home_elsewhere(suggestion, item["loc"])
            message += f" (did you mean `{suggestion}`{f', under {home}' if home else ''}?)"
        elif _home_elsewhere(written_key, item["loc"]):  # a known key in the wrong mapping
            message += f" (`{written_key}` belongs under {_home_elsewhere(written_key, item['loc'])})"
    return f"{location}: {message}" if location else message


_Model = TypeVar("_Model", bound=BaseModel)


def _parse(model: type[_Model], raw: Any, *, label: str, error_type: type[AssayError]) -> _Model:
    try:
        return model.model_validate(raw)
    except ValidationError as error:
        raise error_type(f"{label}: invalid schema: {format_validation_error(error)}") from None


def parse_case_file(raw: Any, *, label: str) -> RawCaseFile:
    """Validate a case mapping; `label` (the case path) prefixes the `CaseError` message."""
    return _parse(RawCaseFile, raw, label=label, error_type=CaseError)


def parse_eval_config_file(raw: Any, *, label: str) -> RawEvalConfigFile:
    """Validate a `config.yaml` mapping; `label` (its path) prefixes the `ConfigError` message."""
    return _parse(RawEvalConfigFile, raw, label=label, error_type=ConfigError)
