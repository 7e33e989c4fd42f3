"""The issue may narrow what the config allows (scope, checks, budget), never widen it.

Each function takes the current value and what the issue asks for, and returns the narrowed value
plus a readable note for every request it refused (shown in the contract comment).
"""

from __future__ import annotations

from bot.contract.globs import glob_within
from bot.contract.models import ALWAYS_DENIED, Budget, Check, Scope


def _unique(items: list[str]) -> list[str]:
    return list(dict.fromkeys(items))


def base_scope(allow: list[str], deny: list[str]) -> Scope:
    """A scope whose deny list always ends with the always-denied globs."""
    return Scope(allow=_unique(allow), deny=_unique([*deny, *ALWAYS_DENIED]))


def narrow_scope(current: Scope, allow: list[str], deny: list[str], source: str) -> tuple[Scope, list[str]]:
    """Intersect the current allow globs with the requested ones; add the requested denies.

    A requested glob is kept when it lies inside a current allow glob; a current glob is kept when
    it lies inside a requested one (the request covers it). A request that overlaps no allowed glob
    that way is refused: that would widen the scope. Denies only ever narrow, so all are added.
    """
    notes: list[str] = []
    new_allow = list(current.allow)
    if allow:
        new_allow = []
        for wanted in allow:
            kept = (
                [wanted]
                if any(glob_within(wanted, have) for have in current.allow)
                else [have for have in current.allow if glob_within(have, wanted)]
            )
            if not kept:
                allowed = ", ".join(f"`{g}`" for g in current.allow) or "nothing"
                notes.append(f"{source}: scope `{wanted}` is outside the allowed scope ({allowed}); ignored")
            new_allow.extend(kept)
    return base_scope(new_allow, [*current.deny, *deny]), notes


def narrow_checks(current: list[Check], names: list[str], source: str) -> tuple[list[Check], list[str]]:
    """Keep only the named checks (marked `issue`: the issue chose them; commands stay the config's)."""
    if not names:
        return current, []
    known = {c.name for c in current}
    notes = [
        f"{source}: check `{n}` is not one of the configured checks ({', '.join(sorted(known)) or 'none'}); ignored"
        for n in names
        if n not in known
    ]
    chosen = [c.model_copy(update={"origin": "issue"}) for c in current if c.name in names]
    return (chosen or current), notes


def narrow_budget(current: Budget, requested: dict[str, str], source: str) -> tuple[Budget, list[str]]:
    """Lower budget limits the issue asks for; raising a limit or an unknown key is refused."""
    notes: list[str] = []
    update: dict[str, float | int] = {}
    for key, raw in requested.items():
        field = Budget.model_fields.get(key)
        if field is None:
            notes.append(f"{source}: budget `{key}` is not a budget key ({', '.join(Budget.model_fields)}); ignored")
            continue
        have = getattr(current, key)
        try:
            value = type(have)(raw)
        except ValueError:
            notes.append(f"{source}: budget `{key}: {raw}` is not a number; ignored")
            continue
        if value < 0:
            notes.append(f"{source}: budget `{key}: {raw}` is negative; ignored")
        elif value > have:
            notes.append(
                f"{source}: budget `{key}: {raw}` would raise the limit of {have}; only lowering is allowed; ignored"
            )
        else:
            update[key] = value
    return current.model_copy(update=update), notes
