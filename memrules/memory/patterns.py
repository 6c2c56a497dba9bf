"""Block patterns: the regular expressions the reflection gate drops
memories by, and the engine that matches them in time linear in the text.

Patterns are compiled with RE2 (the ``google-re2`` package), which never
backtracks: ``(a+)+$`` takes microseconds on any memory, where Python's
``re`` takes longer than a request may wait (over 20 s on 31 characters).
What RE2 cannot match in linear time (backreferences such as ``(a)\\1``,
lookahead and lookbehind) or would need more than `MAX_PATTERN_MEMORY`
bytes to compile (``((a{100}){100}){100}``) is refused when the config is
read (`PatternError`), never met at request time. Matching is
case-insensitive, ``^`` and ``$`` at any line, ``.`` not across lines, and
``\\b`` is an ASCII word boundary.

`DEFAULT_BLOCK_PATTERNS` are matched against every form of a memory
`views` gives (so ``ＩＧＮＯＲＥ``, ``іgnоre``,
``1gn0r3``, ``i g n o r e`` and its base64 are caught as ``ignore``), and
`SQUEEZED_BLOCK_PATTERNS` against its letters only
(`squeezed_views`). The patterns a config
adds are matched against the same forms as the defaults.

All pure: the same text and patterns give the same answer, in bounded time.
"""

from __future__ import annotations

import functools
from typing import Any

import attrs
import re2  # type: ignore[import-untyped]

from memrules.memory.normalize import squeezed_views, views

__all__ = [
    "DEFAULT_BLOCK_PATTERNS",
    "MAX_PATTERN_MEMORY",
    "SQUEEZED_BLOCK_PATTERNS",
    "BlockPattern",
    "PatternError",
    "compile_pattern",
    "first_match",
]

MAX_PATTERN_MEMORY = 8 << 20
"""The most memory (bytes) one compiled block pattern may take."""

_VERBS = (
    r"ignore|ignoring|disregard|forget|override|overrule|bypass|skip|discard|abandon|drop|ditch"
    r"|scrap|throw\W+(?:out|away)|set\W+aside|put\W+aside|neglect|cancel|stop\W+(?:following"
    r"|obeying)|no\W+longer\W+(?:follow|obey)|do\W+not\W+(?:follow|obey)|don'?t\W+(?:follow|obey)"
    r"|pay\W+no\W+attention\W+to"
)
_QUALIFIERS = (
    r"all|any|every|the|your|its|their|these|those|previous|prior|above|earlier|preceding"
    r"|foregoing|original|initial|existing|old|current|default|standing|system|developer|safety"
    r"|content|built-in|programmed|given|other"
)
_RULES = (
    r"instructions?|prompts?|rules|guidelines?|guidance|directives?|commands|guardrails?"
    r"|polic(?:y|ies)|restrictions|constraints|programming|safeguards|filters|training|orders"
    r"|configuration|directions"
)
_MODEL = r"ai|assistant|model|llm|bot|chatbot|agent|gpt|language\W+model"

DEFAULT_BLOCK_PATTERNS: tuple[str, ...] = (
    # The four first built in (kept as they were).
    r"\b(ignore|disregard|forget|override)\b.{0,40}\b(previous|prior|above|earlier|all|system"
    r"|developer)\b.{0,20}\b(instructions?|prompts?|rules|guidelines)\b",
    r"\b(reveal|print|show|repeat|leak)\b.{0,30}\b(system|developer|hidden)\s+(prompt|instructions?"
    r"|message)\b",
    r"\byou\s+are\s+now\s+(in\s+)?(dan|developer\s+mode|jailbroken|unrestricted|unfiltered)\b",
    r"<\|\s*(im_start|im_end|endoftext|eot_id|start_header_id|system|assistant)\s*\|>|\[/?INST\]",
    # Dropping the instructions: a verb, only qualifiers, then the rules.
    rf"\b(?:{_VERBS})\b(?:\W+(?:{_QUALIFIERS})\b){{0,4}}\W+(?:{_RULES})\b",
    rf"\b(?:{_VERBS})\W+everything\W+(?:above|before|so\W+far|you\W+(?:were|have\W+been|'ve\W+been)"
    r"\W+(?:told|given|instructed))",
    # Declaring them void.
    r"\b(?:previous|prior|above|earlier|original|old|initial|existing|all|your|safety|system)"
    rf"\W+(?:\w+\W+){{0,2}}?(?:{_RULES})\W+(?:\w+\W+){{0,5}}?(?:(?:are|is|were|was|have\W+been"
    r"|has\W+been)\W+)?(?:now\W+)?"
    r"(?:void|null|cancel+ed|revoked|suspended|lifted|obsolete|invalid|overridden|superseded"
    r"|disabled|deactivated|removed|no\W+longer\W+(?:valid|apply|applies|in\W+effect|relevant))\b",
    rf"\b(?:overrides?|supersedes?|takes\W+precedence\W+over|has\W+priority\W+over)\W+(?:(?:all|any"
    rf"|the|your|previous|prior|earlier|other|system|developer|existing|original)\W+)*(?:{_RULES})\b",
    # Handing it new ones.
    r"\byour\W+(?:new|real|true|actual|updated|revised|only|hidden|secret)\W+(?:instructions?"
    r"|directives?|orders|task|objective|mission|goal|purpose|prompt|rules|job)\W+(?:is|are|now)\b",
    r"\b(?:new|updated|revised|override|additional|important|urgent)\W+(?:system\W+)?(?:instructions?"
    rf"|directives?|orders|prompt)\W*(?:for\W+(?:the\W+)?(?:{_MODEL})\b|:|are\b)",
    r"\bnew\W+system\W+(?:prompt|message|instructions?)\b",
    r"\b(?:follow|obey)\W+only\W+(?:me|my|this|what\W+i)\b",
    # Leaking the prompt.
    r"\b(?:reveal|print|show|repeat|leak|output|display|dump|disclose|expose|recite|echo|spell\W+out"
    r"|write\W+out|tell\W+me|give\W+me|send\W+me)\b(?:\W+\w+){0,4}?\W+(?:system|developer|hidden"
    r"|initial|original|secret|internal|confidential|pre-?prompt)\W+(?:\w+\W+)?(?:prompt"
    r"|instructions?|message|rules|configuration|config|directives)\b",
    r"\b(?:reveal|print|show|repeat|leak|output|display|dump|disclose|expose|recite)\W+(?:\w+\W+){0,3}?"
    r"your\W+(?:\w+\W+)?(?:prompt|instructions|configuration|config|rules|guidelines|directives)\b",
    r"\b(?:repeat|print|output|show|recite|copy|echo|write)\W+(?:\w+\W+){0,3}?(?:text|words"
    r"|everything|content|lines)\W+(?:above|before\W+this|preceding)\b",
    # Another persona, without the rules.
    r"\byou\W+are\W+(?:now\W+)?(?:in\W+)?(?:dan|jailbroken|unrestricted|unfiltered|uncensored"
    r"|unlimited|root|unchained|freegpt|developer\W+mode|god\W+mode|no\W+longer\W+(?:bound"
    r"|restricted|an?\W+(?:ai|assistant)))\b",
    r"\byou\W+are\W+now\W+free\b",
    r"\b(?:act|behave|respond|pretend|roleplay)\W+(?:as|like|to\W+be|you\W+are|that\W+you\W+are)\W+"
    rf"(?:\w+\W+){{0,3}}?(?:{_MODEL}|version|dan)\W+(?:without|with\W+no|that\W+has\W+no|free\W+of)\W+"
    r"(?:\w+\W+)?(?:rules|restrictions|filters|limits|limitations|guidelines|censorship|morals"
    r"|ethics)\b",
    r"\bact\W+as\W+(?:an?\W+)?(?:dan|jailbroken|unrestricted|unfiltered|uncensored)\b",
    rf"\b(?:{_MODEL})\W+(?:without|with\W+no)\W+(?:any\W+)?(?:\w+\W+)?(?:restrictions|rules|limits"
    r"|filters|guidelines|censorship)\b",
    r"\b(?:developer|god|admin|debug|sudo|jailbreak|dan|unrestricted|maintenance)\W+mode\W+"
    r"(?:is\W+)?(?:now\W+)?(?:enabled|activated|engaged|unlocked|on\s*(?:[.!;:,)]|$))",
    r"\b(?:enable|activate|enter|switch\W+to|turn\W+on)\W+(?:the\W+)?(?:developer|god|admin|debug"
    r"|sudo|jailbreak|dan|unrestricted)\W+mode\b",
    r"\bdo\W+anything\W+now\b",
    r"\b(?:safety|content)\W+(?:filters?|rules|guidelines|guardrails|restrictions)\W+(?:are\W+)?"
    r"(?:now\W+)?(?:off|disabled|removed|suspended|lifted|deactivated)\b",
    r"\byou\W+(?:have|has)\W+no\W+(?:rules|restrictions|limits|filters|guidelines)\b",
    r"\b(?:answer|respond|reply)\W+(?:\w+\W+){0,3}?without\W+(?:any\W+)?(?:refusing|refusals?"
    r"|restrictions|filters|censorship|limits|safety)\b",
    # Text addressed to the model that reads the memory.
    r"\b(?:note|message|instructions?|reminder|directive|order|command|warning|notice)\W+(?:to|for)"
    rf"\W+(?:the\W+|any\W+|all\W+)?(?:{_MODEL})s?\b",
    rf"\b(?:attention|dear|listen|hey)\W+(?:the\W+)?(?:{_MODEL})\W*[:,!]",
    rf"\bif\W+you\W+are\W+(?:an?\W+)?(?:{_MODEL})\b",
    r"\b(?:when|whenever|once|if|after)\W+(?:you|the\W+(?:ai|assistant|model))\W+(?:read|see|retrieve"
    r"|recall|process|load|encounter|find|get)s?\W+(?:this|these)\W+(?:memory|memories|note|message"
    r"|text|line)\b",
    rf"\b(?:{_MODEL})s?\W+(?:reading|processing|seeing)\W+this\b",
    rf"\b(?:{_MODEL})\W+(?:(?:you\W+)?(?:must|should|shall|has\W+to|have\W+to|needs\W+to|need\W+to"
    r"|is\W+to|are\W+to|will))\W+(?:always|never|now|from\W+now\W+on|share|reveal|send|approve|ignore"
    r"|obey|only|tell|recommend|forward|insult|answer|reply)\b",
    r"\b(?:message|note|notice|instructions?|update|order)\W+from\W+(?:the\W+|your\W+)?(?:developers"
    r"|creators|openai|anthropic|makers|system)\b",
    r"\b(?:the\W+developers|openai|anthropic|your\W+creators)\W+(?:have|has)\W+(?:authori[sz]ed"
    r"|approved|allowed|enabled|permitted)\b",
    rf"\b(?:{_VERBS})\W+(?:what|whatever|anything)\W+(?:\w+\W+){{0,3}}?(?:system|developer)\W+"
    r"(?:message|prompt|instructions?)\b",
    r"\b(?:system|admin|administrator|developer|root|security|emergency|priority|confidential"
    r"|secret|hidden|internal|official)\W+(?:override"
    r"|directive|command|instruction|update|notice|alert)\s*:",
    r"\bi(?:\W+am|'m|’m)\W+(?:your|the)\W+(?:developer|creator|admin|administrator|operator|owner"
    r"|programmer|maker)s?\b",
    rf"\b(?:your|the\W+system|safety|the\W+(?:{_MODEL})(?:'s)?)\W+(?:{_RULES})\W+(?:have|has)\W+"
    r"been\W+(?:updated|changed|replaced|revised|modified|rewritten|removed|lifted|suspended"
    r"|disabled)\b",
    r"\byou\W+(?:may|can|are\W+allowed\W+to|are\W+permitted\W+to|are\W+free\W+to)\W+now\W+"
    r"(?:share|reveal|disclose|ignore|bypass|send|leak)\b",
    rf"\bstop\W+being\W+(?:an?\W+)?(?:helpful\W+)?(?:{_MODEL})\b",
    r"\b(?:from\W+now\W+on|from\W+this\W+point(?:\W+forward|\W+on)?|henceforth|starting\W+now)\W+"
    r"you\W+(?:will|are|must|shall|should)\W+(?:now\W+)?(?:answer|act|respond|reply|behave|be"
    r"|pretend|roleplay|speak|play)\W+(?:only\W+)?as\b",
    r"\byou(?:\W+are|'re|’re)\W+(?:now\W+)?(?:an?\W+)?(?:linux\W+)?(?:terminal|shell|console)\W+now\b",
    r"\bexecute\W+(?:whatever|everything|anything|any\W+command)\b",
    r"\btell\W+(?:every|all|any|each|the)\W+users?\b",
    r"\b(?:respond|reply|answer)\W+(?:to\W+)?(?:every|all|each|any)\W+(?:future\W+|subsequent\W+"
    r"|later\W+)?(?:questions?|messages?|requests?|prompts?|queries)\W+(?:only\W+)?with\W*[\"'“‘]",
    r"\b(?:respond|reply|answer)s?\W+(?:to\W+)?(?:every|all|each|any)\W+(?:\w+\W+){0,5}?with\W*"
    r"[\"'“‘]",
    r"\b(?:your|the)\W+(?:system|developer|original|initial)\W+(?:message|prompt|instructions?)\W+"
    r"(?:\w+\W+){0,3}?(?:is|are|was|were)\W+(?:now\W+)?(?:outdated|obsolete|void|fake|wrong"
    r"|invalid|cancel+ed|revoked|no\W+longer)\b",
    r"\b(?:rely|act|follow)\W+only\W+on\W+(?:\w+\W+){0,3}?(?:this|these)\W+(?:memory|memories"
    r"|notes?)\b",
    r"\b(?:never|don'?t|do\W+not)\W+refuse\W+(?:their|the\W+user'?s?|any|his|her)?\W*(?:requests?"
    r"|anything)\b",
    r"\btreat\W+(?:this|the)\W+user\W+as\W+(?:an?\W+)?(?:admin|administrator|superuser|root"
    r"|developer|owner|operator)\b",
    r"\byou\W+(?:no\W+longer\W+(?:have|need)\W+to|don'?t\W+(?:have|need)\W+to|do\W+not\W+(?:have"
    r"|need)\W+to|are\W+not\W+(?:bound|required)\W+to)\W+(?:follow|obey|respect|comply\W+with"
    rf"|abide\W+by)\W+(?:\S+\W+){{0,3}}?(?:{_RULES})\b",
    r"\bbe\W+(?:rude|mean|hostile|insulting|abusive)\W+to\W+(?:the\W+)?users?\b",
    r"\b(?:append|add|attach|include)\W+(?:\S+\W+){0,6}?(?:user'?s?\W+)?(?:token|session|cookie"
    r"|password|api\W+key)\W+(?:\w+\W+){0,4}?(?:every|each|all|any)\W+(?:urls?|links?)\b",
    r"\b(?:ignore|disregard|forget)\W+(?:all\W+)?(?:of\W+)?(?:the\W+|everything\W+)?(?:above"
    r"|preceding|foregoing)\W*(?:and\b|[,;.]|$)",
    r"\bsay\W+(?:that\W+)?(?:you|i)\W+(?:have|has)\W+been\W+(?:hacked|pwned|compromised"
    r"|jailbroken)\b",
    r"\bnever\W+(?:disclose|reveal|mention|say|admit)\W+(?:that\W+)?(?:you\W+were\W+(?:told|asked"
    r"|instructed)|this\W+(?:note|memory|instruction|message)|these\W+instructions)\b",
    r"\bnew\W+(?:rule|instruction|directive|order|task)s?\W+for\W+you\b",
    r"\b(?:safety|security|content|moderation|policy)\W+(?:checks?|filters?|rules|policies"
    r"|restrictions|measures|guidelines)\W+(?:should|must|can|will|are\W+to)\W+(?:all\W+)?be\W+"
    r"(?:skipped|bypassed|disabled|ignored|turned\W+off|lifted|waived)\b",
    r"\b(?:disable|turn\W+off|deactivate|bypass|remove|lift|skip|do\W+not\W+apply|don'?t\W+apply"
    r"|stop\W+applying)\W+(?:the\W+|your\W+|all\W+|any\W+)?(?:(?:content|safety|security)\W+)?"
    r"(?:moderation|(?:content|safety|security)\W+(?:policy|policies|filters?|rules|guidelines"
    r"|checks|restrictions))\b",
    r"\b(?:call|invoke|trigger|execute)\W+(?:the\W+)?(?:\w+\W+){0,2}?(?:tool|function)\b",
    r"\bwhatever\W+the\W+user\W+(?:asks|says|writes|types)\b",
    # Sending what the conversation holds elsewhere.
    r"\b(?:send|forward|email|e-mail|post|upload|transmit|exfiltrate|leak|copy|share|report|submit)"
    r"\W+(?:\w+\W+){0,6}?(?:passwords?|credentials|api\W+keys?|tokens?|secrets|conversation|chat"
    r"|chats|history|transcripts?|user\W*data|personal\W+data|card\W+numbers?|bank\W+details"
    r"|files|internal\W+notes|confidential|passport\W+number)\W+(?:\w+\W+){0,6}?(?:to|at|with)\W+"
    r"(?:\S+@\S+|[a-z][a-z0-9+.-]*://|anyone|whoever|any\W+caller|every(?:one|body)|third\W+part)",
    r"!\[[^\]]*\]\(\s*https?://[^)\s]*(?:\{|%7b|\$\{)",
    r"\b(?:send|forward|post|upload|transmit)\W+(?:\w+\W+){0,6}?(?:messages?|inputs?|everything"
    r"|whatever|all)\W+(?:\w+\W+){0,5}?to\W+https?://",
    r"\b(?:in\W+(?:every|each|all)|always|at\W+the\W+end\W+of\W+(?:every|each))\W+(?:\w+\W+){0,5}?"
    r"(?:include|add|insert|append|end\W+\w+\W+\w+\W+with|embed|put|show|render)\W+(?:\w+\W+){0,4}?"
    r"(?:link|url|image|pixel|https?://)",
    r"\brender\W+this\W+(?:image|pixel|link)\b",
    # A forged turn or role: chat-template tokens and tags.
    r"<\|\s*(?:im_start|im_end|im_sep|endoftext|eot_id|eom_id|start_header_id|end_header_id"
    r"|begin_of_text|system|user|assistant|end)\s*\|>",
    r"<</?sys>>",
    r"</?\s*(?:system|sys|instructions?|memory|memories|context|assistant|developer|admin|tool_call"
    r"|function_calls?|im_start)\b[^>]*>",
    r"^\s*#{2,}\s*(?:system|instructions?|assistant|developer|response)\s*:?\s*$",
    r"^\s*(?:system|developer|admin|administrator|root)\s*(?:prompt|message|override|instructions?"
    r"|note|notice)?\s*:\s*(?:new|you|ignore|the\W+assistant|from\W+now|override|always|never"
    r"|policy)\b",
    r"\bend\W+of\W+(?:the\W+)?(?:memory|memories|memory\W+block|system\W+prompt)\b",
    r"\b(?:begin|start)\W+(?:of\W+)?(?:the\W+)?system\W+prompt\b",
)
"""Memory-poisoning defences the gate applies unless
``default_block_patterns: false``: a stored turn that tells the model to
drop or replace its instructions, declares them void, asks for its prompt,
switches its persona, addresses the model that will read it, sends the
conversation's secrets elsewhere, or carries a chat template's control
tokens or role tags (a forged turn). Narrow on purpose: a pattern that also
matches what users really say (``System: Ubuntu 22.04``, ``from now on
call me Sam``, ``remind me to always CC my manager``) drops their memories
silently."""

SQUEEZED_BLOCK_PATTERNS: tuple[str, ...] = (
    r"(?:ignore|disregard|forget|override|bypass)(?:all|any|the|your)*(?:previous|prior|above"
    r"|earlier|preceding|original|system|developer|safety)*(?:instructions?|prompts?|rules"
    r"|guidelines|directives)",
    r"(?:reveal|print|show|repeat|leak|output|display|dump)(?:me)?(?:the|your)?(?:system|hidden"
    r"|developer|initial|secret)(?:prompt|instructions?|message)",
    r"youarenow(?:in)?(?:dan|jailbroken|unrestricted|unfiltered|developermode|godmode)",
    r"(?:developer|god|dan|jailbreak)mode(?:is)?(?:now)?(?:enabled|activated|unlocked)",
)
"""Defaults matched against a memory's letters and digits only
(`squeezed_views`): the spaced-out
``i g n o r e a l l p r e v i o u s i n s t r u c t i o n s`` that no
word boundary survives."""


class PatternError(ValueError):
    """A block pattern RE2 cannot compile: not a regular expression, one
    that needs backtracking, or too large."""


def _options() -> Any:
    options = re2.Options()
    options.case_sensitive = False
    options.log_errors = False
    options.max_mem = MAX_PATTERN_MEMORY
    return options


@attrs.frozen(slots=True)
class BlockPattern:
    """One compiled block pattern: its source text (``pattern``) and the
    RE2 program that matches it."""

    pattern: str
    program: Any = attrs.field(eq=False, repr=False, hash=False)

    def search(self, text: str) -> bool:
        """Whether the pattern matches anywhere in ``text`` (linear time)."""
        return self.program.search(text) is not None


def compile_pattern(pattern: str) -> BlockPattern:
    """``pattern`` compiled for matching in linear time (multi-line,
    case-insensitive). Raises `PatternError` when it cannot be."""
    try:
        program = re2.compile(f"(?m:{pattern})", _options())
    except re2.error as exc:
        reason = exc.args[0] if exc.args else exc
        if isinstance(reason, bytes):
            reason = reason.decode("utf-8", "replace")
        msg = (
            f"{reason}; block patterns are matched by RE2, in time linear in the text, "
            "which has no backreferences, lookahead or lookbehind"
        )
        raise PatternError(msg) from None
    return BlockPattern(pattern, program)


_SQUEEZED = tuple(compile_pattern(p) for p in SQUEEZED_BLOCK_PATTERNS)


@functools.lru_cache(maxsize=64)
def _combined(patterns: tuple[BlockPattern, ...]) -> BlockPattern | None:
    """One program that matches where any of ``patterns`` does: a memory
    that matches none (nearly all) costs one pass per form, not one per
    pattern. None when the union is too large to compile."""
    try:
        return compile_pattern("|".join(f"(?:{p.pattern})" for p in patterns))
    except PatternError:
        return None


def _first(forms: tuple[str, ...], patterns: tuple[BlockPattern, ...]) -> BlockPattern | None:
    union = _combined(patterns) if patterns else None
    if union is not None and not any(union.search(form) for form in forms):
        return None
    return next((p for p in patterns if any(p.search(form) for form in forms)), None)


def first_match(
    text: str, patterns: tuple[BlockPattern, ...], *, squeezed: bool
) -> BlockPattern | None:
    """The first of ``patterns`` that matches a form of ``text``
    (`views`), else (with ``squeezed``)
    the first of `SQUEEZED_BLOCK_PATTERNS` that matches its letters;
    None when nothing does."""
    found = _first(views(text), patterns)
    if found is None and squeezed:
        found = _first(squeezed_views(text), _SQUEEZED)
    return found
