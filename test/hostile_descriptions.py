"""Hostile robot descriptions (issue 31, docs/SECURITY.md "Bounds on a description"), for the library,
command-line and node tests.

Each case is (name, text, outcome): ``outcome`` is the model's name when the description must load,
else a phrase the refusal must contain (:data:`REFUSALS`). Every one must be decided within 1 s of CPU on every entry point.
"""
ONE_LINK = '<robot name="{name}"><link name="base"/><joint name="j" type="revolute"><parent link="base"/>' \
           '<child link="arm"/><axis xyz="0 0 1"/><limit lower="-1" upper="1" effort="10" velocity="1"/>' \
           '</joint><link name="arm"><inertial><mass value="1"/><origin xyz="0.1 0 0"/>' \
           '<inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial></link></robot>'
ONE_HINGE_MJCF = '<mujoco model="{name}"><worldbody><body name="arm"><joint name="j" axis="0 0 1"/>' \
                 '<inertial pos="0.1 0 0" mass="1" diaginertia="0.01 0.01 0.01"/></body></worldbody></mujoco>'
MB = 1 << 20
#: The phrases of the refusals: libxml2's bounds (robot_dynamics/model/urdf.py PARSER_BOUNDS), a DTD.
REFUSALS = ('bounds', 'DTD')


def refused(outcome):
    """True if ``outcome`` is a refusal's phrase, False if it is the name of the model that loads."""
    return outcome in REFUSALS


def _comments(count, size=1):
    return '<!-- %s -->\n' % ('c' * size) * count


def cases():
    """[(name, text, outcome)] of the hostile descriptions."""
    laughs = ('<?xml version="1.0"?><!DOCTYPE robot [<!ENTITY a "aaaaaaaaaa">'
              + ''.join('<!ENTITY %s "%s">' % (chr(98 + k), ('&%s;' % chr(97 + k)) * 10) for k in range(9))
              + ']>' + ONE_LINK.format(name='&j;'))
    nested = '<robot name="deep">' + '<link name="x">' * 10_000 + '</link>' * 10_000 + '</robot>'
    return [
        ('100,000 comments', '<?xml version="1.0"?>\n' + _comments(100_000) + ONE_LINK.format(name='commented'),
         'commented'),
        ('a 10 MB comment', ONE_LINK.format(name='long_comment').replace(
            '<link name="base"/>', '<link name="base"/><!-- %s -->' % ('c' * (10 * MB))), 'bounds'),
        ('10,000 nested elements', nested, 'bounds'),
        ('a 10 MB attribute', ONE_LINK.format(name='x' * (10 * MB)), 'bounds'),
        ('an entity expansion', laughs, 'DTD'),
        ('a DOCTYPE', '<!DOCTYPE robot SYSTEM "file:///etc/passwd">' + ONE_LINK.format(name='doctype'), 'DTD'),
        ('<mujoco> after 1 MB of comments', _comments(MB // 64, 50) + ONE_HINGE_MJCF.format(name='late_root'),
         'late_root'),
    ]
