# SPDX-License-Identifier: GPL-2.0-or-later
"""ringsched's Python side. ``import ringsched.torch`` registers libringrt as the
torch.distributed backend "ringrt" (see ringsched-torch(3) and docs/pytorch.md)."""
