"""Sheets for one roof face, as the office checks an estimate."""
import math


def sheets(face_width_m: float, cover_width_mm: float) -> int:
    return math.ceil(face_width_m * 1000 / cover_width_mm)


def sheet_length_mm(rafter_m: float) -> int:
    return int(math.ceil((rafter_m * 1000 + 50) / 10) * 10)


print(sheets(12.0, 760), sheet_length_mm(6.37))
