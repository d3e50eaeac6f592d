"""The broker's config/*.json files, read the way `ConfigManager.load` reads them: the file itself, and when it
is missing, empty or does not decode, its `.bak` (which holds the previous persist, so offsets taken from it are
older). A `.bak` that does not decode either makes `load()` return false: the broker does not start.

Sources: common/.../ConfigManager.java, broker/.../BrokerPathConfigHelper.java,
broker/.../offset/ConsumerOffsetManager.java, store/.../schedule/ScheduleMessageService.java (4.9.7; broker/ in 5.x).
"""

from __future__ import annotations

import dataclasses
import json
import re
from decimal import Decimal
from pathlib import Path

from .errors import StoreError
from .javacompat import crc31, decode_utf8, java_long, parse_int, parse_long

_FASTJSON_KEY = re.compile(r'("(?:[^"\\]|\\.)*")|([{,]\s*)(-?\d+)(\s*:)')


class Members(dict):
    """An object as the decode meets it: its keys' last values, and `pairs`, every (key, value) in order (a typed
    map's decode converts each as it reads it: a key given twice throws on its first value too); a file's
    document knows its `source`."""

    pairs: list
    source: Path | None = None


def _members(pairs: list) -> Members:
    out = Members(pairs)
    out.pairs = pairs
    return out


def _smart_name(name: str) -> str:
    return name.lower().replace("_", "").replace("-", "")


class AmbiguousProperty(StoreError):
    """A config object names one bean property in two spellings (bean_field): which value the broker's fastjson
    takes depends on the class it decodes into, so no answer is given from it."""


# the config beans' top-level properties rmqctl reads (bean_field)
READ_PROPERTIES = (
    "offsetTable", "lmqOffsetTable", "topicConfigTable", "subscriptionGroupTable", "forbiddenTable", "dataVersion",
    "queueOffsetMap",
)  # fmt: skip


def spelt_twice(doc) -> AmbiguousProperty | None:
    """The first property of READ_PROPERTIES a config document names ambiguously (bean_field), None if none."""
    for name in READ_PROPERTIES:
        try:
            bean_field(doc, name)
        except AmbiguousProperty as e:
            return e
    return None


def bean_field(doc, name: str, default=None):
    """The value a config bean's property `name` gets from a decoded document (`default`: not there), as fastjson
    sets it. A member may name it in another case or with '_' or '-' (JavaBeanDeserializer.smartMatch:
    `offset_table`, `OffsetTable`), and the broker loads such a file. Where it is named more than once: all
    spelt exactly, the last value wins; none spelt exactly, the first. Where exact and other spellings mix,
    which one wins depends on the class decoded into (fastjson 1.2.83, measured on RocketMQ 5.3.3's own
    TopicConfigSerializeWrapper and TopicConfig and on classes of the tests: one keeps the first, another lets
    a later smart match overwrite an exact one): rmqctl does not guess (AmbiguousProperty)."""
    if not isinstance(doc, dict):
        return default
    pairs = doc.pairs if isinstance(doc, Members) else list(doc.items())
    found = [(key, value) for key, value in pairs if _smart_name(key) == _smart_name(name)]
    if not found:
        return default
    spellings = sorted({key for key, _ in found})
    exact = [key == name for key, _ in found]
    if any(exact) and not all(exact):
        raise AmbiguousProperty(
            f"the property {name} is named {len(found)} times, as {', '.join(map(repr, spellings))}: which one the "
            "broker's fastjson takes depends on the class it decodes into, so rmqctl does not guess; keep one",
            getattr(doc, "source", None),
        )
    return found[-1][1] if all(exact) else found[0][1]


class DecimalText(float):
    """A number with a fraction or an exponent, as fastjson reads it: a BigDecimal of its `text`."""

    text: str

    def __new__(cls, text: str):
        out = super().__new__(cls, text)
        out.text = text
        return out


class BareKey(str):
    """A map key written without quotes (1.5, 1L, true): fastjson converts its token's `value`, not its text."""

    value: object

    def __new__(cls, text: str, value):
        out = super().__new__(cls, text)
        out.value = value
        return out


def parse_fastjson(text: str):
    """A document as ConfigManager's decode reads it (fastjson 1.2: RemotingSerializable.fromJson, a typed
    JSON.parseObject with the default features). What the broker writes differs from JSON only in unquoted
    integer map keys ({"offsetTable":{"t@g":{0:12}}}): quoted outside strings, then parsed as JSON. A file an
    operator edited may hold what fastjson also takes (a byte order mark, single quotes, unquoted names,
    comments, extra commas, 01 or 12L): read by `_Lenient` then, as the broker loads it, not taken for
    undecodable. json.JSONDecodeError for what the broker's decode refuses too."""
    text = text.removeprefix("\ufeff")
    fixed = _FASTJSON_KEY.sub(lambda m: m.group(1) or f'{m.group(2)}"{m.group(3)}"{m.group(4)}', text)
    try:
        return json.loads(fixed, parse_float=DecimalText, object_pairs_hook=_members)
    except json.JSONDecodeError:
        return _Lenient(text).document()


class _Lenient:
    """fastjson's lexer with its default parser features (AllowSingleQuotes, AllowUnQuotedFieldNames,
    AllowArbitraryCommas; comments skipped as white space; numbers with a sign, leading zeros or a type suffix):
    names and integer keys become strings, as the strict path gives them, other bare keys BareKeys. Commas as
    the typed decode takes them (`members`), which differs from a generic parse in maps of integer keys. Other
    control characters (NUL, \\x0b, EOI \\x1a, ...) are skipped wherever its nextToken reads, but not where it
    scans a field name or a String-keyed map's key (`members`)."""

    TOKEN = re.compile(
        r"""(?P<space>(?:[ \t\r\n\f\b]+|/\*.*?\*/|//[^\n]*)+)
        |(?P<control>[\x00-\x07\x0b\x0e-\x1f\x7f]+)
        |(?P<string>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')
        |(?P<number>[+-]?\d+(?:\.\d*)?(?:[eE][+-]?\d+)?[LSBFD]?(?![\w.]))
        |(?P<name>[A-Za-z_$][\w$]*)
        |(?P<mark>[{}\[\]:,])""",
        re.VERBOSE | re.DOTALL,
    )
    ESCAPES = {"b": "\b", "f": "\f", "F": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v", "/": "/"}
    WORDS = {"true": True, "false": False, "null": None, "undefined": None}
    INTEGER_KEY = re.compile(r"[+-]?\d+")

    def __init__(self, text: str):
        self.text = text
        self.tokens, self.after_control, control = [], [], False
        for m in self._scan(text):
            if m.lastgroup in ("space", "control"):
                control |= m.lastgroup == "control"
                continue
            self.tokens.append((m.lastgroup, m.group(), m.start()))
            self.after_control.append(control)
            control = False
        self.at = 0

    def _scan(self, text: str):
        pos = 0
        while pos < len(text):
            m = self.TOKEN.match(text, pos)
            if m is None:
                raise json.JSONDecodeError("not a token fastjson reads", text, pos)
            yield m
            pos = m.end()

    def document(self):
        if not self.tokens:
            raise json.JSONDecodeError("blank text, which the broker's decode throws on", self.text, 0)
        value = self.value()
        if self.at < len(self.tokens):
            self.fail("text after the document")
        return value

    def fail(self, what: str, at: int | None = None):
        at = self.at if at is None else at
        pos = self.tokens[at][2] if at < len(self.tokens) else len(self.text)
        raise json.JSONDecodeError(what, self.text, pos)

    def next(self) -> tuple[str, str]:
        if self.at >= len(self.tokens):
            self.fail("the document ends here")
        kind, token, _ = self.tokens[self.at]
        self.at += 1
        return kind, token

    def peek(self) -> str | None:
        return self.tokens[self.at][1] if self.at < len(self.tokens) else None

    def value(self):
        kind, token = self.next()
        if token == "{":
            return self.members()
        if token == "[":
            return self.elements()
        if kind == "string":
            return self.string(token)
        if kind == "number":
            return self.number(token)
        if kind == "name" and token in self.WORDS:
            return self.WORDS[token]
        self.at -= 1
        return self.fail("not a value")

    def elements(self) -> list:
        out = []
        while True:
            while self.peek() == ",":  # (AllowArbitraryCommas; fastjson needs no comma between elements)
                self.next()
            if self.peek() == "]":
                self.next()
                return out
            out.append(self.value())

    def members(self) -> dict:
        """An object. Its commas as the decode into its type takes them: a map of integer keys (queue ids,
        delay levels; fastjson's MapDeserializer reads them with parseInt) refuses a doubled or leading comma
        and needs none between entries; any other object takes extra commas and needs one between fields."""
        out, extra, missing = {}, None, None  # (the token at the first extra comma, the first missing one)
        pairs, control = [], None  # (every pair; a control character before a key or its ':')
        while True:
            commas = self.at
            while self.peek() == ",":
                self.next()
            if extra is None and self.at - commas > (1 if out else 0):
                extra = commas
            if missing is None and out and self.at == commas and self.peek() != "}":
                missing = commas
            if self.peek() == "}":
                self.next()
                integer_keys = any(isinstance(k, BareKey) or self.INTEGER_KEY.fullmatch(k) for k in out)
                if integer_keys and extra is not None:
                    self.fail("an extra comma in a map of integer keys (the typed decode's parseInt)", extra)
                if not integer_keys and missing is not None:
                    self.fail("a ',' between the fields", missing)
                if not integer_keys and control is not None:
                    self.fail("a control character where the decode scans a field name", control)
                return _members(pairs)
            kind, key = self.next()
            if kind not in ("string", "number", "name"):
                self.fail("a field name", self.at - 1)
            if control is None and self.after_control[self.at - 1]:
                control = self.at - 1
            if self.next()[1] != ":":
                self.fail("a ':' after the field name", self.at - 1)
            if control is None and self.after_control[self.at - 1]:
                control = self.at - 1
            pairs.append((self.key(kind, key), self.value()))
            out[pairs[-1][0]] = pairs[-1][1]

    def key(self, kind: str, token: str) -> str:
        """A member's key: a string's text; a bare integer as its text (as the strict path quotes it), another
        bare number or true/false/null as a BareKey; a bare name as itself."""
        if kind == "string":
            return self.string(token)
        if kind == "number":
            value = self.number(token)
            return token if isinstance(value, int) and self.INTEGER_KEY.fullmatch(token) else BareKey(token, value)
        return BareKey(token, self.WORDS[token]) if token in self.WORDS else token

    @staticmethod
    def number(token: str):
        digits = token.rstrip("LSBFD")
        return DecimalText(digits) if any(c in digits for c in ".eE") else int(digits)

    def string(self, token: str) -> str:
        return re.sub(r"\\(u[0-9a-fA-F]{4}|x[0-9a-fA-F]{2}|.)", self._unescape, token[1:-1], flags=re.DOTALL)

    def _unescape(self, m) -> str:
        e = m.group(1)
        if len(e) > 1:  # \uXXXX, \xXX
            return chr(int(e[1:], 16))
        if e in "01234567":  # fastjson's scanString: \0 to \7 are those chars
            return chr(int(e))
        return self.ESCAPES.get(e, e if e in "\\\"'" else None) or self._bad_escape(e)

    def _bad_escape(self, e: str) -> str:
        raise json.JSONDecodeError(f"the escape \\{e}", self.text, 0)


INT_BITS, LONG_BITS = 32, 64
_TRAILING_ZEROS = re.compile(r"\.0*$")  # TypeUtils.NUMBER_WITH_TRAILING_ZEROS_PATTERN


def _big_decimal_value(number: DecimalText, bits: int) -> int | None:
    """TypeUtils.intValue / longValue of a BigDecimal: truncated and wrapped to the type where its scale is
    within +-100, else exact (None where that throws)."""
    d = Decimal(number.text)
    whole = int(d)
    if -100 <= -d.as_tuple().exponent <= 100:
        return java_long(whole << (LONG_BITS - bits)) >> (LONG_BITS - bits)
    exact = d == whole and -(1 << (bits - 1)) <= whole < (1 << (bits - 1))
    return whole if exact else None


def _token_value(value, bits: int) -> int | None:
    """A JSON value's token as IntegerCodec / LongCodec read it (fastjson 1.2.83): true/false as 1/0, an integer
    within the type (lexer.intValue / longValue throw past it), a decimal as _big_decimal_value; None where the
    decode throws (null: a ConcurrentHashMap holds none; an array or object)."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, DecimalText):
        return _big_decimal_value(value, bits)
    if isinstance(value, int):
        return value if -(1 << (bits - 1)) <= value < (1 << (bits - 1)) else None
    return None


def queue_id_of(key: str) -> int | None:
    """A Map<Integer, ...> key as the broker's typed decode reads it: a bare token by its value; text by
    TypeUtils.castToInt (commas dropped, a trailing '.0...' dropped, then Integer.parseInt). None where the
    decode throws."""
    if isinstance(key, BareKey):
        return _token_value(key.value, INT_BITS)
    if key in ("", "null", "NULL"):
        return None
    return parse_int(_TRAILING_ZEROS.sub("", key.replace(",", ""), count=1))


def offset_of(value) -> int | None:
    """A Long value as the broker's typed decode reads it: a token by _token_value; text by TypeUtils.castToLong
    (commas dropped, then Long.parseLong; an ISO-8601 date, which it would also take as its milliseconds, no
    broker writes: refused here). None where the decode throws."""
    if isinstance(value, str):
        return None if value in ("", "null", "NULL") else parse_long(value.replace(",", ""))
    return _token_value(value, LONG_BITS)


# the ConfigManager files under {storePathRootDir}/config (4.9.7 and 5.3.3); timercheck is binary, not one
JSON_CONFIG_FILES = (
    "topics.json",
    "subscriptionGroup.json",
    "consumerOffset.json",
    "lmqConsumerOffset.json",
    "delayOffset.json",
    "consumerFilter.json",
    "consumerOrderInfo.json",
    "topicQueueMapping.json",
    "messageRequestMode.json",
    "timermetrics",
    "transactionMetrics",
)


@dataclasses.dataclass
class ConfigText:
    """One config file or its .bak as read: absent, empty, a parsed document, or text that does not decode."""

    path: Path
    exists: bool
    size: int
    document: object | None = None
    error: str | None = None  # why it does not decode
    cut: bool = False  # it decodes up to its end and then stops: a write cut short

    @property
    def sound(self) -> bool:
        return self.document is not None


def read_text(path: Path) -> ConfigText:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return ConfigText(path, False, 0)
    if not data:
        return ConfigText(path, True, 0)
    text = decode_utf8(data)  # MixAll.file2String: new String(data), malformed bytes replaced
    try:
        document = parse_fastjson(text)
        if document is not None and not isinstance(document, dict):  # (null: the decode keeps nothing)
            shape = "an array" if isinstance(document, list) else "a value"
            return ConfigText(
                path, True, len(data), error=f"{shape}, not an object, which the broker's decode throws on"
            )
        if isinstance(document, Members):
            document.source = path
        return ConfigText(path, True, len(data), document={} if document is None else document)
    except json.JSONDecodeError as e:
        cut = e.pos >= len(text.rstrip())
        what = "ends in the middle of the document" if cut else f"does not parse at character {e.pos}: {e.msg}"
        return ConfigText(path, True, len(data), error=what, cut=cut)
    except ValueError as e:
        return ConfigText(path, True, len(data), error=str(e))


@dataclasses.dataclass
class ConfigFile:
    """A config file and its .bak, and which of them ConfigManager.load would take."""

    name: str
    main: ConfigText
    bak: ConfigText

    @property
    def loaded_from(self) -> str | None:
        """'main', 'bak', or None when the broker loads nothing from it (both absent or empty)."""
        if self.main.sound:
            return "main"
        if self.bak.sound:
            return "bak"
        return None

    @property
    def load_fails(self) -> bool:
        """load() returns false (the broker stops starting) only when the .bak has content that does not
        decode, after the file itself was empty, absent or undecodable."""
        return not self.main.sound and self.bak.exists and self.bak.size > 0 and not self.bak.sound

    @property
    def document(self):
        return self.main.document if self.main.sound else self.bak.document


def config_dir(root: Path) -> Path:
    return Path(root) / "config"


def read_config(root: Path, name: str) -> ConfigFile:
    d = config_dir(root)
    main, bak = read_text(d / name), read_text(d / (name + ".bak"))
    if name in OFFSET_TABLES:
        main, bak = offset_table_decoded(main), offset_table_decoded(bak)
    return ConfigFile(name, main, bak)


OFFSET_TABLES = ("consumerOffset.json", "lmqConsumerOffset.json", "delayOffset.json")


def offset_table_decoded(text: ConfigText) -> ConfigText:
    """ConsumerOffsetManager.decode puts the offsetTable into ConcurrentMap<String, ConcurrentMap<Integer, Long>>
    (LmqConsumerOffsetManager's lmqOffsetTable: ConcurrentHashMap<String, Long>; DelayOffsetSerializeWrapper's
    offsetTable: ConcurrentMap<Integer, Long>): a queue id or offset fastjson cannot convert (queue_id_of,
    offset_of), a null one included (a ConcurrentHashMap holds none), makes the decode throw, and
    ConfigManager.load takes the .bak instead."""
    doc = text.document if isinstance(text.document, dict) else {}
    try:
        table, light = bean_field(doc, "offsetTable"), bean_field(doc, "lmqOffsetTable")
    except AmbiguousProperty:  # (the broker loads it; which table it takes is not known: readers of it refuse)
        return text
    if text.path.name.startswith("delayOffset.json"):
        problem = _bad_map(table, "", True) if table is not None else None
    elif table is not None and not isinstance(table, dict):
        problem = f"offsetTable {table!r} is not a map"
    else:
        queues = _pairs(table) if table is not None else []
        problem = next((_bad_map(q, f"{key} ", True) for key, q in queues if _bad_map(q, "", True)), None)
    if light is not None and problem is None:
        problem = _bad_map(light, "lmqOffsetTable ", False)
    if problem is None:
        return text
    return dataclasses.replace(text, document=None, error=f"{problem}, which the broker's decode throws on")


def _pairs(table: dict) -> list:
    return table.pairs if isinstance(table, Members) else list(table.items())


def _bad_map(table, where: str, integer_keys: bool) -> str | None:
    """What in a typed map's pairs its decode throws on (None: nothing)."""
    if not isinstance(table, dict):  # (null included: a ConcurrentHashMap holds none)
        return f"{where}{table!r} is not a map"
    for key, value in _pairs(table):
        if integer_keys and queue_id_of(key) is None:
            return f"{where}key {key!r} is not an int"
        if offset_of(value) is None:
            return f"{where}{key!r}: {value!r} is not a long"
    return None


def present_configs(root: Path) -> list[ConfigFile]:
    """Every known JSON config file that exists as itself or as its .bak."""
    out = []
    for name in JSON_CONFIG_FILES:
        c = read_config(root, name)
        if c.main.exists or c.bak.exists:
            out.append(c)
    return out


@dataclasses.dataclass(frozen=True)
class CommittedOffset:
    """One entry of ConsumerOffsetManager.offsetTable: the next queue offset `group` will consume."""

    group: str
    topic: str
    queueId: int
    offset: int


LMQ_PREFIX = "%LMQ%"  # MixAll.isLmq: a group or topic of a light message queue


def committed_offsets(doc, lmq: bool = False) -> tuple[list[CommittedOffset], list[str]]:
    """consumerOffset.json's offsetTable ({"topic@group": {queueId: offset}}), with a note for each entry the
    broker's own decode would not turn into an offset. `lmq`: lmqConsumerOffset.json as LmqConsumerOffsetManager
    serves it: an LMQ group's offset from lmqOffsetTable ({"topic@group": offset}, its one queue 0), any other
    group's from offsetTable; an entry in the other table is never read."""
    if not isinstance(doc, dict):
        return [], []
    out, notes = [], []
    table = bean_field(doc, "offsetTable")
    if table is not None and not isinstance(table, dict):
        notes.append("offsetTable is not an object")
    for key, per_queue in (table or {}).items() if isinstance(table, dict) else ():
        topic, sep, group = key.partition("@")
        if not sep or "@" in group or not isinstance(per_queue, dict):
            notes.append(f"entry {key!r} is not topic@group with a queue table")
            continue
        if lmq and group.startswith(LMQ_PREFIX):
            notes.append(f"entry {key!r}: an LMQ group's offset is served from lmqOffsetTable, never from here")
            continue
        for qid, offset in per_queue.items():
            queue_id, value = queue_id_of(qid), offset_of(offset)
            if queue_id is None or value is None:
                notes.append(f"{key} queue {qid!r}: {offset!r} is not a queue offset")
            else:
                out.append(CommittedOffset(group, topic, queue_id, value))
    light = bean_field(doc, "lmqOffsetTable") if lmq else None
    for key, offset in light.items() if isinstance(light, dict) else ():
        topic, sep, group = key.partition("@")
        if not sep or not group.startswith(LMQ_PREFIX):
            notes.append(f"lmqOffsetTable entry {key!r}: only an LMQ group's topic@group is served from it")
            continue
        if offset_of(offset) is None:
            notes.append(f"lmqOffsetTable {key}: {offset!r} is not a queue offset")
        else:
            out.append(CommittedOffset(group, topic, 0, offset_of(offset)))
    out.sort(key=lambda c: (c.group, c.topic, c.queueId))
    return out, notes


def delay_level_offsets(doc) -> dict[int, int]:
    """delayOffset.json's offsetTable: delay level -> next queue offset of SCHEDULE_TOPIC_XXXX queue level-1."""
    table = bean_field(doc, "offsetTable")
    out = {}
    for level, offset in (table or {}).items() if isinstance(table, dict) else ():
        if queue_id_of(level) is not None and offset_of(offset) is not None:
            out[queue_id_of(level)] = offset_of(offset)
    return dict(sorted(out.items()))


def topic_names(doc) -> set[str] | None:
    """topics.json's topicConfigTable keys, or None when the document has none."""
    table = bean_field(doc, "topicConfigTable")
    return set(table) if isinstance(table, dict) else None


def batch_cq_topics(doc) -> set[str]:
    """topics.json's topics whose attribute queue.type is BatchCQ (QueueTypeUtils.getCQType)."""
    table = bean_field(doc, "topicConfigTable")
    return {
        name
        for name, conf in (table.items() if isinstance(table, dict) else ())
        if isinstance(attributes := bean_field(conf, "attributes"), dict) and attributes.get("queue.type") == "BatchCQ"
    }


@dataclasses.dataclass(frozen=True)
class Epoch:
    epoch: int
    startOffset: int


def read_epochs(root: Path) -> tuple[list[Epoch], str | None]:
    """5.x controller mode's epochFileCheckpoint (CheckpointFile of EpochEntry): a line with the entry count,
    a line with UtilAll.crc32 of the entry lines (0: unchecked), then `epoch-startOffset` per line; the .bak
    when the file is missing, empty, or fails its count or CRC. Returns the entries and the file read (None:
    neither is there)."""
    for path in (Path(root) / "epochFileCheckpoint", Path(root) / "epochFileCheckpoint.bak"):
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except (FileNotFoundError, UnicodeDecodeError):
            continue
        try:
            count, crc = int(lines[0]), int(lines[1])
        except (IndexError, ValueError):
            continue
        entries = []
        for line in lines[2:]:
            parts = line.split("-")
            if len(parts) == 2 and parts[0].lstrip("+").isdigit() and parts[1].lstrip("+").isdigit():
                entries.append(Epoch(int(parts[0]), int(parts[1])))
        body = "".join(line + "\n" for line in lines[2:]).encode("utf-8")
        if entries and len(entries) == count and (crc == 0 or crc31(body) == crc):
            return entries, str(path)
    return [], None


def read_broker_identity(root: Path) -> dict | None:
    """5.x controller mode's brokerIdentity (BrokerMetadata): `clusterName#brokerName#brokerId`."""
    try:
        parts = (Path(root) / "brokerIdentity").read_text(encoding="utf-8").split("#")
    except (FileNotFoundError, UnicodeDecodeError):
        return None
    if len(parts) < 3 or not parts[2].strip().lstrip("-").isdigit():
        return {"raw": "#".join(parts), "loaded": False}
    return {"clusterName": parts[0], "brokerName": parts[1], "brokerId": int(parts[2]), "loaded": True}
