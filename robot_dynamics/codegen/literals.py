"""C literals and comments from Python values: numbers C reads back exactly,
strings escaped, comment text that cannot close its comment."""
import re

import numpy as np


def c_string(text):
    """``text`` as a C string literal: printable ASCII kept, quotes, backslashes
    and '?' (trigraphs) escaped, every other byte of its UTF-8 an octal escape."""
    out = []
    for b in text.encode("utf-8"):
        ch = chr(b)
        if ch in '"\\?':
            out.append("\\" + ch)
        elif 32 <= b < 127:
            out.append(ch)
        else:
            out.append("\\%03o" % b)
    return '"%s"' % "".join(out)


def comment_text(text):
    """``text`` made safe inside a /* */ comment: only letters, digits, ``_.,:/+-`` and spaces."""
    return re.sub(r"[^A-Za-z0-9_.,:/+\- ]", "_", str(text))


def c_double(x):
    """A double literal C reads back exactly (HUGE_VAL for infinity)."""
    x = float(x)
    if np.isinf(x):
        return "HUGE_VAL" if x > 0 else "-HUGE_VAL"
    return repr(x)
