"""An MJCF file's mesh files, found or missing, before MuJoCo compiles it.

MuJoCo reads every ``<mesh file>`` when it compiles, and a missing one
stops the compile (with a path that can be wrong: for a model that
``<include>``s its arm, MuJoCo 4 names ``<meshdir>/<the model's folder>/<file>``,
a file it never opened). This module parses the file with MuJoCo's
``MjSpec`` (defaults, ``<include>``), finds each mesh file as MuJoCo does
(the file if absolute; else under ``meshdir``, itself under the model
file's folder unless absolute), and names a missing one by the path the
user would write: the model file's folder as the user gave it, then
``meshdir``, then the file as the XML writes it (MuJoCo 4 puts the folder
of the included file before a missing file's name; that folder is taken
off again).

With ``skip_missing_meshes``, a geom whose mesh file is missing is deleted
with its mesh when its body's inertia does not come from its geoms (an
explicit ``<inertial>`` under ``inertiafromgeom="auto"``, or
``inertiafromgeom="false"``, or the geom's group outside
``inertiagrouprange``): the dynamics then do not depend on it. A body whose
inertia would come from a missing mesh is refused by name.
"""
import os
import warnings
from xml.etree import ElementTree

from ..errors import URDFError, URDFWarning


def compile_file(mujoco, path, skip_missing_meshes):
    """The compiled ``mujoco.MjModel`` of the MJCF file ``path`` (str, as the user wrote it).

    Raises:
        URDFError: a mesh file is missing (named, with the geoms and bodies
            that use it), unless ``skip_missing_meshes`` and no body's
            inertia comes from it; MuJoCo cannot parse or compile the file.
    """
    spec = mujoco.MjSpec.from_file(path)
    missing = _missing_meshes(spec, path)
    if missing and not skip_missing_meshes:
        raise URDFError("MJCF %r: mesh file(s) missing: %s; the dynamics need none of them when every body's "
                        "inertia is explicit: load_mjcf(..., skip_missing_meshes=True) then leaves their geoms out"
                        % (path, ", ".join("%r (mesh %r)" % (shown, mesh.name) for mesh, shown in missing)))
    if missing:
        _skip(mujoco, spec, missing)
    return spec.compile()


def _missing_meshes(spec, path):
    """[(mesh, the path as the user would write it)] of the meshes whose file is absent."""
    meshdir = spec.meshdir or ""
    folder = os.path.dirname(path)
    prefixes = sorted(_include_folders(path), key=len, reverse=True)
    out = []
    for mesh in spec.meshes:
        if not mesh.file:
            continue                                  # vertices given in the XML
        written = next((mesh.file[len(p):] for p in prefixes if mesh.file.startswith(p)), mesh.file)
        shown = os.path.normpath(os.path.join(folder, meshdir, written))
        if not os.path.isfile(shown):
            out.append((mesh, shown))
    return out


def _include_folders(path):
    """The folders of the files the MJCF ``path`` includes, each as MuJoCo 4
    writes it before a missing mesh file of that file (``<top folder>/<folder of
    the include>/``); includes are relative to the top file's folder."""
    folder = os.path.dirname(path)
    out, todo, seen = set(), [path], set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        try:
            root = ElementTree.parse(name).getroot()
        except (OSError, ElementTree.ParseError):
            continue                                  # MuJoCo's parser has said what is wrong with it
        for element in root.iter("include"):
            included = os.path.join(folder, element.get("file") or "")
            if os.path.dirname(included):
                out.add(os.path.dirname(included) + "/")
            todo.append(included)
    return out


def _skip(mujoco, spec, missing):
    names = {mesh.name for mesh, _ in missing}
    geoms = [g for g in spec.geoms if g.type == mujoco.mjtGeom.mjGEOM_MESH and g.meshname in names]
    for geom in geoms:
        if _inertia_from(mujoco, spec, geom):
            raise URDFError("MJCF body %r takes its inertia from %s, whose mesh file %r is missing: give the "
                            "body an explicit <inertial> or provide the file"
                            % (geom.parent.name, _geom(geom), dict((m.name, s) for m, s in missing)[geom.meshname]))
    for geom in geoms:
        spec.delete(geom)
    for mesh, _ in missing:
        spec.delete(mesh)
    if geoms:
        by_body = {}
        for geom in geoms:
            by_body.setdefault(geom.parent.name, []).append(_geom(geom))
        warnings.warn("MJCF: %d geom(s) left out, their mesh files missing (their bodies' inertias are explicit): %s"
                      % (len(geoms), "; ".join("body %r: %s" % (body, ", ".join(labels))
                                               for body, labels in by_body.items())),
                      URDFWarning, stacklevel=5)


def _geom(geom):
    return "geom %r" % geom.name if geom.name else "a geom of mesh %r" % geom.meshname


def _inertia_from(mujoco, spec, geom):
    """Whether the geom's mass and shape enter its body's inertia (MuJoCo's compiler rules)."""
    body = geom.parent
    if body.name == "world":
        return False                                   # the world's inertia moves nothing
    rule = spec.compiler.inertiafromgeom
    if rule == mujoco.mjtInertiaFromGeom.mjINERTIAFROMGEOM_FALSE:
        return False
    if rule == mujoco.mjtInertiaFromGeom.mjINERTIAFROMGEOM_AUTO and body.explicitinertial:
        return False
    low, high = spec.compiler.inertiagrouprange
    return low <= geom.group <= high
