"""docs/NODES.md's parameter tables, printed from the nodes' schema files (``config/params/*.yaml``).

    python -m robot_dynamics.ros.param_tables                  # every table, in NODES.md's markers
    python -m robot_dynamics.ros.param_tables state.yaml       # one file's
    python -m robot_dynamics.ros.param_tables --write docs/NODES.md   # renew the tables in place

Each table is one file's own entries (an included file has its own table) between the markers
``<!-- params: NAME -->`` and ``<!-- /params -->``: a test checks that NODES.md holds exactly
what this prints (test/test_param_files.py). Reads the files only (no rclpy).
"""
import json
import sys

from . import param_files

BEGIN, END = '<!-- params: %s -->', '<!-- /params -->'
HEADER = ('| parameter | type | default | read-only | checks | description |\n'
          '|---|---|---|---|---|---|')


def table(name):
    """The markdown table of the entries of ``name`` (``'dynamics_node.yaml'``) written in that file."""
    entries = [e for e in param_files.read(name)[1] if e['file'] == name]
    rows = [HEADER]
    for e in entries:
        kind = e['type'] + (' (dynamic typing)' if e.get('dynamic_typing') else '')
        rows.append('| `%s` | %s | %s | %s | %s | %s |' % (
            e['name'], kind, _default(e['default_value']), 'yes' if e.get('read_only') else 'no',
            _checks(e.get('validation')), _cell(e['description'])))
    return '\n'.join(rows)


def block(name):
    """``table(name)`` between its markers, with the line that says where it comes from."""
    return '\n'.join((BEGIN % name, '<!-- generated from config/params/%s by python -m '
                      'robot_dynamics.ros.param_tables; do not edit -->' % name, table(name), END))


def tables():
    """Every file's block, in file-name order, separated by a blank line."""
    names = sorted(p.name for p in param_files.folder().glob('*.yaml'))
    return '\n\n'.join(block(n) for n in names)


def blocks_in(text):
    """{name: block} of the marked blocks of a document ``text`` (NODES.md)."""
    found = {}
    start = text.find('<!-- params: ')
    while start >= 0:
        name = text[start + len('<!-- params: '):text.index(' -->', start)]
        end = text.index(END, start) + len(END)
        found[name] = text[start:end]
        start = text.find('<!-- params: ', end)
    return found


def renewed(text):
    """``text`` with each marked block printed afresh."""
    for name, old in blocks_in(text).items():
        text = text.replace(old, block(name))
    return text


def _default(value):
    if isinstance(value, str):
        return '`%s`' % value if value else '""'
    return '`%s`' % json.dumps(value)


def _checks(validation):
    """The validators of an entry, as generate_parameter_library writes them (``gt<>: [0]``)."""
    return '; '.join('`%s: %s`' % (k, json.dumps(v if v is not None else [])) for k, v in (validation or {}).items())


def _cell(text):
    """One line of table text: '|' escaped, and '<' so that <robot> or <dynamics> shows as written."""
    return ' '.join(text.split()).replace('|', '\\|').replace('<', '&lt;')


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ['--write']:
        for path in argv[1:]:
            with open(path, encoding='utf-8') as f:
                text = f.read()
            with open(path, 'w', encoding='utf-8') as f:
                f.write(renewed(text))
        return
    print('\n\n'.join(block(n) for n in argv) if argv else tables())


if __name__ == '__main__':
    main()
