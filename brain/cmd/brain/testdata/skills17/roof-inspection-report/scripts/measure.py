"""Pitched roof area from plan area and pitch, as the office checks it."""
import math
import sys


def pitched_area(plan_area_m2: float, pitch_degrees: float) -> float:
    return plan_area_m2 / math.cos(math.radians(pitch_degrees))


if __name__ == "__main__":
    plan, pitch = float(sys.argv[1]), float(sys.argv[2])
    print(f"{pitched_area(plan, pitch):.1f} m2")
