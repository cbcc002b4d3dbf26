"""corral: profile-guided heap layout for unmodified x86-64 Linux programs."""

__version__ = "0.1.0"
