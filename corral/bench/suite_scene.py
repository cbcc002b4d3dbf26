"""povray's input: a generated scene of ours, `scene-N.pov` with N objects.

A city of small CSG buildings on a terrain mesh: each object is a union,
difference, intersection or merge of two to four primitives (boxes,
spheres, cylinders, cones, tori) with its own texture (a plain, checkered
or gradient pigment with a colour map, a finish, sometimes a normal),
placed by a seeded generator on a grid. povray allocates for it the
parser's objects, textures and CSG child lists, their bounding boxes and
the bounding hierarchy the renderer walks for every ray; the mesh (N/2
smooth triangles) adds its own arrays and tree. The camera stands at the
city's edge and looks across it, so near buildings fill the frame and a
ray to a far one passes many bounding boxes.

Written out in full, object by object, rather than as a POV-Ray loop: the
parser then reads, allocates and links each one, as it does a real
modelled scene. No #include: the scene needs nothing but povray itself.
"""

import math
import random

from corral.bench import seeded

SEED = 2027
PRIMITIVES = ("box", "sphere", "cylinder", "cone", "torus")
COMBINATIONS = ("union", "difference", "intersection", "merge")


def _v(x: float, y: float, z: float) -> str:
    return f"<{x:.3f}, {y:.3f}, {z:.3f}>"


def _primitive(rng: random.Random, size: float) -> str:
    kind = rng.choice(PRIMITIVES)
    s = size * rng.uniform(0.5, 1.0)
    dx, dy, dz = (rng.uniform(-0.4, 0.4) * size for _ in range(3))
    if kind == "box":
        return f"box {{ {_v(dx - s, dy, dz - s)}, {_v(dx + s, dy + 2 * s, dz + s)} }}"
    if kind == "sphere":
        return f"sphere {{ {_v(dx, dy + s, dz)}, {s:.3f} }}"
    if kind == "cylinder":
        return f"cylinder {{ {_v(dx, dy, dz)}, {_v(dx, dy + 2.5 * s, dz)}, {s / 2:.3f} }}"
    if kind == "cone":
        return f"cone {{ {_v(dx, dy, dz)}, {s:.3f}, {_v(dx, dy + 2 * s, dz)}, {s / 4:.3f} }}"
    return (f"torus {{ {s:.3f}, {s / 4:.3f} rotate {_v(rng.uniform(0, 90), 0, 0)} "
            f"translate {_v(dx, dy + s, dz)} }}")


def _colour(rng: random.Random) -> str:
    return f"rgb {_v(rng.random(), rng.random(), rng.random())}"


def _texture(rng: random.Random) -> str:
    pick = rng.random()
    if pick < 0.4:
        pigment = f"color {_colour(rng)}"
    elif pick < 0.7:
        pigment = f"checker color {_colour(rng)} color {_colour(rng)} scale {rng.uniform(0.05, 0.3):.3f}"
    else:
        stops = " ".join(f"[{i / 3:.3f} color {_colour(rng)}]" for i in range(4))
        pigment = f"gradient y color_map {{ {stops} }} scale {rng.uniform(0.2, 1.0):.3f}"
    normal = f" normal {{ bumps {rng.uniform(0.1, 0.5):.2f} scale 0.05 }}" if rng.random() < 0.3 else ""
    return (f"texture {{ pigment {{ {pigment} }}{normal} "
            f"finish {{ diffuse {rng.uniform(0.5, 0.9):.2f} specular {rng.uniform(0, 0.6):.2f} }} }}")


def _height(x: float, z: float) -> float:
    return 0.3 * math.sin(x * 0.7) * math.cos(z * 0.5)


def _mesh(rng: random.Random, triangles: int, side: float) -> list[str]:
    """A terrain of smooth triangles over the city's square."""
    cells = max(1, int(math.sqrt(triangles / 2)))
    step = side / cells

    def point(i, j):
        x, z = -side / 2 + i * step, -side / 2 + j * step
        return _v(x, _height(x, z) - 0.05, z)

    def normal(i, j):        # (-dh/dx, 1, -dh/dz) of _height
        x, z = -side / 2 + i * step, -side / 2 + j * step
        return _v(-0.21 * math.cos(x * 0.7) * math.cos(z * 0.5), 1,
                  0.15 * math.sin(x * 0.7) * math.sin(z * 0.5))

    out = ["mesh {"]
    for i in range(cells):
        for j in range(cells):
            a, b, c, d = (i, j), (i + 1, j), (i + 1, j + 1), (i, j + 1)
            for tri in ((a, b, c), (a, c, d)):
                corners = ", ".join(f"{point(*p)}, {normal(*p)}" for p in tri)
                out.append(f"  smooth_triangle {{ {corners} }}")
    out.append(f"  texture {{ pigment {{ color {_colour(rng)} }} finish {{ diffuse 0.8 }} }}")
    out.append("}")
    return out


def scene_pov(objects: int) -> str:
    """The scene with `objects` CSG objects on a terrain of objects/2 triangles."""
    rng = seeded.rng(objects, SEED)
    per_side = max(1, math.ceil(math.sqrt(objects)))
    spacing = 1.0
    side = per_side * spacing
    out = ["// corral's povray workload (corral/bench/suite_scene.py): a city of CSG objects.",
           "#version 3.7;",
           "global_settings { assumed_gamma 1.0 max_trace_level 5 }",
           f"camera {{ location {_v(0, 2.5, -side / 2 - 1)} look_at {_v(0, 0, side / 4)} angle 60 }}",
           f"light_source {{ {_v(side, side * 2, -side)} color rgb 1 }}",
           f"light_source {{ {_v(-side, side, -side / 2)} color rgb 0.4 shadowless }}",
           "sky_sphere { pigment { gradient y color_map { [0 color rgb <0.8, 0.85, 1>] "
           "[1 color rgb <0.2, 0.3, 0.8>] } } }"]
    out += _mesh(rng, objects // 2, side)
    for k in range(objects):
        row, col = divmod(k, per_side)
        x = -side / 2 + (col + 0.5) * spacing + rng.uniform(-0.15, 0.15)
        z = -side / 2 + (row + 0.5) * spacing + rng.uniform(-0.15, 0.15)
        size = spacing * rng.uniform(0.2, 0.35)
        parts = " ".join(_primitive(rng, size) for _ in range(rng.randint(2, 4)))
        out.append(f"{rng.choice(COMBINATIONS)} {{ {parts} {_texture(rng)} "
                   f"rotate {_v(0, rng.uniform(0, 360), 0)} translate {_v(x, _height(x, z), z)} }}")
    return "\n".join(out) + "\n"
