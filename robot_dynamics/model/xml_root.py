"""What kind of robot description an XML text is, read in linear time: its root element.

A description comes from users and from the network (the ``robot_description``
topic), so it is read by a real XML parser, never by a regular expression:
Python's expat (``xml.parsers.expat``), given the whole bounded text in one
call (fed in pieces, expat scans a token that spans them again with each
piece: quadratic in a 10 MB attribute), stops at the first start tag (its
handler raises ``StopIteration``, the one way to end pyexpat's parse from
inside, with the answer). Whatever stands before it (an XML declaration, comments,
processing instructions, white space) is checked for well-formedness on the
way, in time linear in its length, and at most ``max_bytes`` of it are read.
A document type declaration (``<!DOCTYPE``, and so any ``<!ENTITY``) is
refused as soon as expat meets it, before any entity could be declared or
expanded.

:func:`root_element` names the root (``"robot"`` for URDF, ``"mujoco"`` for
MJCF); :func:`attribute_present` looks for an attribute anywhere in the
document (an MJCF's ``file=``), with the same parser and bounds; :func:`element_tree` reads
the whole document into a small tree (the collision elements of a URDF, an SRDF:
robot_dynamics.contact).
"""
import xml.parsers.expat

from ..errors import URDFError

#: A description is refused beyond this size (as ``rd.load_urdf`` and ``rd.load_mjcf`` refuse it).
MAX_BYTES = 16 * 1024 * 1024


def _as_bytes(text):
    return text.encode("utf-8") if isinstance(text, str) else bytes(text)


def _refuse_dtd(*_):
    raise URDFError("the description contains a DTD (<!DOCTYPE>): refused, a robot description needs none "
                    "and entities can read files or expand without bound")


def _parse(data, max_bytes, found):
    """Read ``data`` (bytes) with expat until ``found(name, attributes)`` of a start tag returns
    something other than None; that value, or None when no start tag gives one."""
    if len(data) > max_bytes:
        raise URDFError("the description has %d bytes, more than max_bytes=%d (a robot description is "
                        "kilobytes; meshes belong in separate files)" % (len(data), max_bytes))
    parser = xml.parsers.expat.ParserCreate()
    parser.StartDoctypeDeclHandler = _refuse_dtd
    parser.EntityDeclHandler = _refuse_dtd

    def on_start(name, attributes):
        value = found(name, attributes)
        if value is not None:
            raise StopIteration(value)                  # known: the parse ends here
    parser.StartElementHandler = on_start
    try:
        parser.Parse(data, True)
    except StopIteration as stop:
        return stop.value
    except xml.parsers.expat.ExpatError as exc:
        raise URDFError("the description is not well-formed XML: %s" % exc) from None
    return None


def root_element(text, *, max_bytes=MAX_BYTES):
    """The name of the root element of an XML description.

    Args:
        text: the XML (str or bytes); bytes may carry any encoding expat
            reads (UTF-8, UTF-16, ISO-8859-1, US-ASCII).
        max_bytes: a longer text is refused without being parsed.

    Returns:
        str: the root's tag as written (``"robot"``, ``"mujoco"``, or a
        prefixed name such as ``"xacro:robot"``).

    Raises:
        URDFError: the text is longer than ``max_bytes``, has a DTD, is not
            well-formed before its root, or has no root element.
    """
    name = _parse(_as_bytes(text), max_bytes, lambda name, _attributes: name)
    if name is None:                        # expat raises "no element found" first; kept for safety
        raise URDFError("the description has no root element")
    return name


def attribute_present(text, attribute, *, max_bytes=MAX_BYTES):
    """True if any element of the XML ``text`` (str or bytes) has the attribute ``attribute``.

    Raises:
        URDFError: as :func:`root_element`, for any part of the document.
    """
    return bool(_parse(_as_bytes(text), max_bytes, lambda _name, attributes: attribute in attributes or None))


class Element:
    """One element of :func:`element_tree`: ``tag`` (str), ``attrib`` (dict str -> str),
    ``children`` (list of Element); text content is not kept."""
    __slots__ = ("tag", "attrib", "children")

    def __init__(self, tag, attrib):
        self.tag, self.attrib, self.children = tag, attrib, []

    def iter(self, tag):
        """Every descendant (self included) whose tag is ``tag``, in document order."""
        stack = [self]
        while stack:
            e = stack.pop()
            if e.tag == tag:
                yield e
            stack.extend(reversed(e.children))


def element_tree(text, *, max_bytes=MAX_BYTES):
    """The whole XML ``text`` (str or bytes) as a tree of :class:`Element`, read by expat.

    Same bounds as :func:`root_element`: at most ``max_bytes``, no DTD; the
    parse is linear in the text (no regular expression, no entity).

    Raises:
        URDFError: the text is too long, has a DTD or is not well-formed.
    """
    data = _as_bytes(text)
    root = Element("", {})
    stack = [root]

    def on_start(name, attributes):
        e = Element(name, attributes)
        stack[-1].children.append(e)
        stack.append(e)

    def on_end(_name):
        stack.pop()

    if len(data) > max_bytes:
        raise URDFError("the document has %d bytes, more than max_bytes=%d" % (len(data), max_bytes))
    parser = xml.parsers.expat.ParserCreate()
    parser.StartDoctypeDeclHandler = _refuse_dtd
    parser.EntityDeclHandler = _refuse_dtd
    parser.StartElementHandler, parser.EndElementHandler = on_start, on_end
    try:
        parser.Parse(data, True)
    except xml.parsers.expat.ExpatError as exc:
        raise URDFError("the document is not well-formed XML: %s" % exc) from None
    return root.children[0]
