"""Images as data: URIs, so the report is one file that needs no network
and no neighbouring files."""

import base64
import mimetypes
from pathlib import Path

IMAGE_TYPES = {"image/png", "image/svg+xml", "image/jpeg", "image/gif"}


def data_uri(content: bytes, mime: str) -> str:
    return f"data:{mime};base64,{base64.b64encode(content).decode('ascii')}"


def image_file(path: Path) -> tuple[str | None, str | None]:
    """(data URI, None) for a readable image file, or (None, why not)."""
    mime, _ = mimetypes.guess_type(path.name)
    if mime not in IMAGE_TYPES:
        return None, f"{path.name} is not an image the report can embed"
    try:
        return data_uri(path.read_bytes(), mime), None
    except OSError as e:
        return None, f"cannot read {path}: {e.strerror or e}"
