"""``robot_dynamics.load_urdf``: the one URDF loader.

The model layer parses the URDF and checks a loop declaration against the
tree (:func:`robot_dynamics.model.urdf.read_urdf`); whether the loops can be
closed needs the kinematics above it, so the public loader lives here, one
layer up, and the model layer never imports upwards.
``robot_dynamics.model.load_urdf`` is a deprecated alias of
``load_urdf(..., check_assembly=False)``.
"""
import os

from ..errors import URDFError
from ..model.mjcf import load_mjcf
from ..model.urdf import MAX_BYTES, read_urdf
from ..model.xml_root import attribute_present, root_element
from .assembly import check_assembles


def load_urdf(source, *, root_joint=None, gravity=(0.0, 0.0, -9.81), max_bytes=MAX_BYTES, loops=None,
              check_assembly=True, actuators=None):
    """Load a robot from a URDF file path or URDF XML text.

    Args:
        source: path to a ``.urdf`` file (str or os.PathLike), or the XML text.
        root_joint: None (the default): the root link is fixed to the world,
            unless the URDF attaches it through a ``floating`` or ``planar``
            joint; ``"floating"`` or ``"planar"``: the root link moves
            through that joint (as Pinocchio's root joint). A URDF whose
            root link is a world link with one floating (planar) joint to
            the base gives the same model as ``root_joint="floating"``
            (``"planar"``) on the base. Conventions of q and v:
            :mod:`robot_dynamics.model.configuration`.
        gravity: (3,) gravity acceleration [m/s^2], in the base (root link)
            frame of a fixed-base robot, in the world frame of a floating or
            planar one; ``model.with_gravity(g)`` gives a copy with another one.
        max_bytes: larger descriptions are refused (16 MiB by default).
        loops: closure joints of a closed-loop mechanism, declared beside
            the URDF (a YAML file path or text, or a list of dicts): see
            :mod:`robot_dynamics.model.loops` and ``Model.with_loops``.
            Loops are checked in one way: the declaration against the tree
            (:mod:`robot_dynamics.model.loops`), then that the mechanism can
            be assembled (:func:`robot_dynamics.assemble` from the neutral
            configuration and seeded random guesses within the joint
            limits); a closure that cannot be assembled raises
            :class:`URDFError` naming the loop.
        check_assembly: False skips the assembly check (loops declared to
            study their kinematics, which cannot close); the declaration is
            still checked.
        actuators: each joint's rotor inertia (``armature``, or
            ``rotor_inertia`` and ``gear_ratio``) and friction law: a YAML
            file path or text, or a dict ``{joint: {...}}`` (schema, units
            and precedence in docs/ACTUATORS.md; ``Model.with_actuators``).
            It wins over the URDF: its gear ratio over a ``<transmission>``'s
            ``mechanicalReduction``, its friction law over ``<dynamics>``.

    The XML is untrusted input: a DTD (``<!DOCTYPE``, hence any entity
    declaration or external reference) is refused, nothing is fetched from
    the file system or the network, and lxml's own limits on node size and
    entity amplification stay on.

    Returns:
        Model with revolute, continuous and prismatic joints as degrees of
        freedom, fixed joints merged and mimic joints coupled.

    Raises:
        URDFError: the file is missing, the XML is malformed, or the robot
            is not a single tree of supported joints with valid attributes;
            an ``actuators`` declaration with an unknown joint or field or a
            bad value (the message names the joint and the field).

    Warns:
        InertiaWarning: a link's inertia is not positive definite or breaks
            the triangle inequality (the link is named).
        URDFWarning: a joint mimics a joint the robot lacks (it then moves
            independently), or the parser met an unknown tag or attribute in
            the elements it reads (links, joints, inertials).
    """
    model = read_urdf(source, root_joint=root_joint, gravity=gravity, max_bytes=max_bytes, loops=loops,
                      actuators=actuators)
    if model.loops and check_assembly:
        check_assembles(model)
    return model


def is_mjcf(text):
    """True if the XML text (str or bytes) has MJCF's root element ``<mujoco>``; False for any other
    root and for text that is not XML (:func:`robot_dynamics.model.xml_root.root_element` reads it, in
    linear time)."""
    try:
        return root_element(text) == "mujoco"
    except URDFError:
        return False


def load_description(source, *, gravity=(0.0, 0.0, -9.81), loops=None, path=None, actuators=None,
                     skip_missing_meshes=False):
    """A robot description, URDF or MJCF (told apart by the root element), as the nodes and
    the command line read it.

    Args:
        source: the XML text (str or bytes).
        gravity: (3,) [m/s^2]; an MJCF's own ``<option gravity>`` is replaced by it,
            as the nodes' ``gravity`` parameter says.
        loops: closure joints, as for :func:`load_urdf`.
        actuators: armature and friction laws, as for :func:`load_urdf` (an
            MJCF: ``Model.with_actuators``, over the MJCF's own).
        path: the file the text came from, if any: an MJCF is then compiled from the
            file, so that its ``<include>`` and asset files are found beside it. An
            MJCF given as text alone (a parameter, a topic) may reference no file.
        skip_missing_meshes: an MJCF file's mesh geoms whose files are absent are left out
            when every body's inertia is explicit (:func:`robot_dynamics.load_mjcf`).

    Raises:
        URDFError: as :func:`load_urdf` and :func:`robot_dynamics.load_mjcf`.
    """
    if not is_mjcf(source):                 # a text that is no XML gets the URDF loader's reason
        data = source.encode("utf-8") if isinstance(source, str) else bytes(source)
        return load_urdf(data, gravity=gravity, loops=loops, actuators=actuators)
    text = source.decode("utf-8", "replace") if isinstance(source, (bytes, bytearray)) else source
    if path is None and attribute_present(text, "file"):
        raise URDFError("an MJCF description given as text may not reference files (it has a file= "
                        "attribute: an <include> or an asset); give the path of the .xml file instead")
    model = load_mjcf(os.fspath(path) if path is not None else text,
                      skip_missing_meshes=skip_missing_meshes).with_gravity(gravity)
    if actuators:
        model = model.with_actuators(actuators)
    if loops:
        model = model.with_loops(loops)
        check_assembles(model)
    return model
