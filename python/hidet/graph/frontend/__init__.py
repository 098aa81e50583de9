"""Hidet's front ends under the paths its guides import (``hidet.graph.frontend.torch``)."""
