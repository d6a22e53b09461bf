"""The Panda of example-robot-data as a MuJoCo model for the sysid-arm experiment (issue 14 item 6).

The URDF is read as is, with its <visual>/<collision> elements stripped (MuJoCo cannot read the DAE meshes; no
contact is simulated) and the two finger joints made fixed (fingers at 0: torsion's loader welds the hand and
fingers into panda_link7 the same way, `UrdfOptions { root: panda_link0, tip: panda_link8 }`). `fusestatic`
merges the welded bodies, so MuJoCo's panda_link7 is torsion's panda_link7 (link frame; MuJoCo stores the COM
frame as body_ipos / body_iquat). Contact and joint limits are disabled.
"""
import os
import re

import mujoco
import numpy as np

JOINTS = [f"panda_joint{k}" for k in range(1, 8)]
BODIES = [f"panda_link{k}" for k in range(1, 8)]
# the ground truth the data is generated with (per joint): viscous damping, N·m·s/rad, and dry friction
# (MuJoCo frictionloss), N·m
DAMPING = np.array([0.6, 0.6, 0.5, 0.5, 0.25, 0.2, 0.15])
FRICTIONLOSS = np.array([0.8, 0.8, 0.6, 0.6, 0.3, 0.25, 0.2])
# position actuators tracking the excitation reference (N·m/rad, N·m·s/rad)
KP = np.array([2000, 2000, 1500, 1500, 400, 300, 200.0])
KV = np.array([80, 80, 60, 60, 15, 12, 8.0])


def panda_urdf():
    import site
    import sysconfig

    for d in [sysconfig.get_paths()["purelib"], *site.getsitepackages(), site.getusersitepackages()]:
        p = os.path.join(d, "cmeel.prefix/share/example-robot-data/robots/panda_description/urdf/panda.urdf")
        if os.path.isfile(p):
            return p
    raise SystemExit("example-robot-data is not installed (python3 -m pip install example-robot-data)")


def urdf_text():
    s = open(panda_urdf()).read()
    s = re.sub(r"<visual>.*?</visual>", "", s, flags=re.S)
    s = re.sub(r"<collision>.*?</collision>", "", s, flags=re.S)
    s = re.sub(r'(<joint name="panda_finger_joint[12]" type=")prismatic(")', r"\1fixed\2", s)
    s = s.replace("</robot>", '<mujoco><compiler fusestatic="true" discardvisual="true"/></mujoco></robot>', 1)
    return s


def spec(damping=DAMPING, frictionloss=FRICTIONLOSS):
    """The MjSpec: the stripped URDF, damping/frictionloss, one position actuator per joint, sensors."""
    sp = mujoco.MjSpec.from_string(urdf_text())
    sp.option.timestep = 1e-3
    # implicit in the servos' kv and the joint damping: with Euler, kv h / I > 2 on the light mode of joints 1 and 3
    sp.option.integrator = mujoco.mjtIntegrator.mjINT_IMPLICITFAST
    sp.option.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONTACT | mujoco.mjtDisableBit.mjDSBL_LIMIT
    for k, j in enumerate(JOINTS):
        sp.joint(j).damping = [float(damping[k]), 0.0, 0.0]
        sp.joint(j).frictionloss = float(frictionloss[k])
        sp.joint(j).armature = 0.0
    for k, j in enumerate(JOINTS):
        a = sp.add_actuator(name=f"act{k + 1}", target=j, trntype=mujoco.mjtTrn.mjTRN_JOINT)
        a.set_to_position(kp=float(KP[k]), kv=float(KV[k]))
    for j in JOINTS:
        sp.add_sensor(name=f"{j}_pos", type=mujoco.mjtSensor.mjSENS_JOINTPOS, objtype=mujoco.mjtObj.mjOBJ_JOINT,
                      objname=j)
    for j in JOINTS:
        sp.add_sensor(name=f"{j}_vel", type=mujoco.mjtSensor.mjSENS_JOINTVEL, objtype=mujoco.mjtObj.mjOBJ_JOINT,
                      objname=j)
    for k in range(7):
        sp.add_sensor(name=f"act{k + 1}_frc", type=mujoco.mjtSensor.mjSENS_ACTUATORFRC,
                      objtype=mujoco.mjtObj.mjOBJ_ACTUATOR, objname=f"act{k + 1}")
    return sp


def link_inertials(m):
    """Per arm body: mass, COM in the link frame (3) and the rotational inertia about the COM in the link frame
    (3 × 3, row-major), from MuJoCo's body_mass / body_ipos / body_iquat / body_inertia."""
    out = []
    for b in BODIES:
        i = m.body(b).id
        r = np.zeros(9)
        mujoco.mju_quat2Mat(r, m.body_iquat[i])
        r = r.reshape(3, 3)
        ic = r @ np.diag(m.body_inertia[i]) @ r.T
        out.append(np.concatenate([[m.body_mass[i]], m.body_ipos[i], ic.ravel()]))
    return np.array(out)
