"""Type stubs of the torsion extension module (crates/torsion-py/src). Arrays are float64 NumPy arrays;
inputs also accept float32 arrays (up-cast exactly) and sequences of numbers. State layouts: see the `torsion` package docstring / README."""
from os import PathLike
from typing import Any, List, Optional, Sequence, Tuple, Union

import numpy as np
import numpy.typing as npt

ArrayLike = Union[npt.NDArray[np.float64], Sequence[float], Sequence[Sequence[float]]]
F64 = npt.NDArray[np.float64]
Names = Optional[Sequence[str]]

class SimulationError(RuntimeError):
    """A step produced a non-finite state."""

class Model:
    @staticmethod
    def from_urdf(path: Union[str, PathLike[str]], root: Optional[str] = None, tip: Optional[str] = None,
                  drop_off_chain: bool = False) -> Model:
        """With `tip`, only the joints of the chain root -> tip move: every other joint below `root` is locked at 0
        and its links are welded into the body they hang from (Pinocchio's buildReducedModel); `drop_off_chain=True`
        drops them instead (the bare chain)."""
    @staticmethod
    def from_urdf_string(text: str, root: Optional[str] = None, tip: Optional[str] = None,
                         label: str = "<string>", drop_off_chain: bool = False) -> Model: ...
    @staticmethod
    def from_mjcf(path: Union[str, PathLike[str]]) -> Model: ...
    @staticmethod
    def from_mjcf_string(text: str, label: str = "<string>") -> Model: ...
    @staticmethod
    def two_link_arm(l1: float = 0.8, l2: float = 0.5, mass: float = 1.0, gravity: Optional[ArrayLike] = None,
                     dt: float = 0.01) -> Model: ...
    @staticmethod
    def floating_tree() -> Model: ...
    @staticmethod
    def baxter_left_arm(drop_off_chain: bool = False) -> Model:
        """Baxter left arm (torso -> left_hand_link, 7 hinges) from pip's example-robot-data, gripper (fingers locked
        at 0), hand sensors and dummy links welded in (20.07 kg); `drop_off_chain=True`: the bare arm of spec 000
        sec. 4.7, the hand lumped into the wrist and the rest dropped (19.71 kg)."""
    @property
    def name(self) -> str: ...
    @property
    def body_count(self) -> int: ...
    @property
    def joint_count(self) -> int: ...
    @property
    def nq(self) -> int: ...
    @property
    def nv(self) -> int: ...
    @property
    def nu(self) -> int:
        """Actuator controls (MuJoCo nu: MJCF motor / position / velocity / general on hinge / slide joints and on
        two-site tendons, file order)."""
    @property
    def na(self) -> int:
        """Actuator activation states (MuJoCo na: filter actuators); FeatherstoneSolver's state is [q, v, act]."""
    @property
    def actuator_name(self) -> list[str]:
        """Actuator names in ctrl order."""
    @property
    def body_name(self) -> list[str]: ...
    @property
    def integrator(self) -> str:
        """The file's `<option integrator>` ('Euler', 'RK4', 'implicitfast'; 'Euler' for URDF and built-in models)."""
    @property
    def body_fixed(self) -> list[bool]: ...
    @property
    def body_dynamic(self) -> list[int]: ...
    @property
    def body_mass(self) -> F64: ...
    @property
    def joint_name(self) -> list[str]: ...
    @property
    def joint_type(self) -> list[str]:
        """'revolute' | 'prismatic' | 'fixed' | 'ball' | 'free' per joint."""
    @property
    def gravity(self) -> F64: ...
    @gravity.setter
    def gravity(self, g: ArrayLike) -> None: ...
    @property
    def dt(self) -> float: ...
    @dt.setter
    def dt(self, dt: float) -> None: ...
    def neutral_q(self) -> F64: ...
    @property
    def param_names(self) -> list[str]:
        """All differentiable parameters in table order: body_mass[b], body_inertia[b].ixx/ixy/ixz/iyy/iyz/izz,
        joint_anchor_parent[j].x/y/z, joint_anchor_child[j].x/y/z, joint_spring[j].k/alpha1/alpha2/l1/l2/x_rest,
        shape_friction[s], shape_restitution[s] (contact material of every shape; `name#index` for a shared name)."""
    def params_select(self, prefix: str) -> list[str]: ...
    def params_get(self, names: Names = None) -> F64: ...
    def params_set(self, names: Names, values: ArrayLike) -> None:
        """All or nothing: values finite, names once, then validated (mass > 0, inertia SPD, shape friction >= 0,
        restitution in [0, 1]); unchanged on error."""
    def with_params(self, names: Names, values: ArrayLike) -> Model: ...
    def copy(self) -> Model: ...

class ModelBuilder:
    def __init__(self, name: str = "model", gravity: Optional[ArrayLike] = None, dt: float = 0.01) -> None:
        """gravity defaults to (0, 0, -9.81)."""
    def add_fixed_body(self, name: str, x: Optional[ArrayLike] = None, q: Optional[ArrayLike] = None) -> int: ...
    def add_body(self, name: str, mass: float, inertia: ArrayLike, com: Optional[ArrayLike] = None) -> int: ...
    def add_joint(self, name: str, kind: str, parent: int, child: int, anchor_parent: Optional[ArrayLike] = None,
                  anchor_child: Optional[ArrayLike] = None, axis: Optional[ArrayLike] = None,
                  limit: Optional[Tuple[float, float]] = None, damping: float = 0.0) -> int:
        """kind: 'revolute' | 'prismatic' | 'fixed' | 'ball' | 'free'; anchors: joint point from each body's COM,
        in that body's frame; axis defaults to z."""
    def build(self) -> Model: ...

class _SolverBase:
    def state_dim(self, model: Model) -> int: ...
    def tangent_dim(self, model: Model) -> int: ...
    def control_dim(self, model: Model) -> int: ...
    def retract(self, model: Model, x: ArrayLike, d: ArrayLike) -> F64: ...
    def local_diff(self, model: Model, x: ArrayLike, other: ArrayLike) -> F64: ...
    def grad_to_tangent(self, model: Model, x: ArrayLike, g: ArrayLike) -> F64: ...

class XpbdSolver(_SolverBase):
    def __init__(self, iterations: int = 30, compliance: float = 0.0, substeps: int = 1,
                 ordering: str = "gauss_seidel", jacobi_relaxation: float = 1.0, limits: bool = True,
                 springs: bool = True) -> None: ...
    iterations: int
    compliance: float
    substeps: int
    ordering: str
    jacobi_relaxation: float
    limits: bool
    springs: bool
    def initial_state(self, model: Model, q: Optional[ArrayLike] = None) -> F64: ...
    def joint_angles(self, model: Model, states: ArrayLike) -> F64: ...

class FeatherstoneSolver(_SolverBase):
    """Semi-implicit Euler in generalized coordinates (MuJoCo's Euler). State [q (nq), v (nv), act (na)];
    controls [u (nv): generalized forces, N or N*m; ctrl (nu): MuJoCo's ctrl of the model's actuators, clamped to
    ctrlrange], so `rollout` takes controls of shape (T, nv + nu); the actuator forces (gain, bias, gear,
    forcerange as MuJoCo) add to u. `step_jacobians`' B has the columns (u, ctrl)."""
    def __init__(self, joint_damping: bool = True, integrator: str = "Euler") -> None:
        """integrator: 'Euler' (MuJoCo's semi-implicit Euler), 'RK4' (MuJoCo's) or 'implicitfast' ('implicit' runs as
        implicitfast); the model file's choice is `Model.integrator`."""
    joint_damping: bool
    integrator: str
    def initial_state(self, model: Model, q: Optional[ArrayLike] = None, v: Optional[ArrayLike] = None) -> F64: ...

class NcpSolver(_SolverBase):
    """Frictional contact by staggered projections (spec 001): collision detection from the model's shapes, ADMM QP
    (normal impulses) + QCQP (exact Coulomb disk, or 'box' / 'diamond' pyramid); restitution by an impact solve from
    the pre-step velocity (Poisson), then the step's solve. State [q, v].
    A contact pair's friction and restitution are the larger of its two shapes' model parameters
    `shape_friction[shape]` / `shape_restitution[shape]` (differentiable: `rollout_vjp`, `step_jacobians`)."""
    def __init__(self, n_step: int = 10, friction_set: str = "cone", baumgarte: float = 0.0,
                 tolerance: float = 0.0, margin: float = 0.01, passive: bool = True,
                 gradient: str = "auto", package_dirs: Sequence[Union[str, PathLike[str]]] = ()) -> None:
        """gradient: 'auto', 'fixed_point' (implicit derivative of the NCP solution) or 'cascade' (through the
        executed passes). package_dirs: folders where `package://NAME/...` mesh names are looked up first (as
        DIR/NAME/... or DIR/...), before ROS_PACKAGE_PATH, the folders above the model file and
        example-robot-data's install folder."""
    n_step: int
    friction_set: str
    def initial_state(self, model: Model, q: Optional[ArrayLike] = None, v: Optional[ArrayLike] = None) -> F64: ...

class LcpSolver(_SolverBase):
    """Frictional contact as a boxed LCP (spec 004, Jade): an impact LCP (restitution, bounce threshold) then the
    step's LCP, each solved by the chain Jade's Dantzig -> PGS with a validity check (no valid answer:
    SimulationError, never a frictionless step). State [q, v]; controls one generalized force per DoF.
    μ and ε are the shapes' parameters `shape_friction[·]` / `shape_restitution[·]` (differentiable)."""
    def __init__(self, position: str = "parallel", bounce_threshold: float = 0.1,
                 chain: Sequence[str] = ("jade", "pgs"), pgs_sweeps: int = 10000, margin: float = 0.01,
                 passive: bool = True, baumgarte: float = 0.0,
                 package_dirs: Sequence[Union[str, PathLike[str]]] = (), ccd: Optional[bool] = None) -> None:
        """position: 'parallel' | 'semi_implicit'; chain: ('jade',) | ('jade', 'pgs'); ccd: time-of-impact
        backtracking (None: on with 'parallel', off with 'semi_implicit'; True needs 'parallel')."""
    position: str
    bounce_threshold: float
    chain: list[str]
    margin: float
    ccd: bool
    def initial_state(self, model: Model, q: Optional[ArrayLike] = None, v: Optional[ArrayLike] = None) -> F64: ...

class TensegritySolver(_SolverBase):
    """Tensegrity robots (spec 003; SUPERball's MJCF unchanged): free rods, cables, motor filters and rod contact,
    the CLI's `--solver tensegrity`. contact='linear': Featherstone with spec 003's linear contact model on the
    rod / plane geoms, parameters (beta, e, gamma, mu, eps) = `contact_params` (else the model's
    `torsion_linear_contact` custom numeric, else (0.5, 0, 0.5, 0.5, 0.005)), differentiable as "contact_beta",
    "contact_e", "contact_gamma", "contact_mu", "contact_eps" (`param_names`). contact='ncp': the exact-cone ncp
    stepper on the same rods (`ncp`: its NcpSolver options), shape friction / restitution as NcpSolver; models with
    cables or actuators are refused (the ncp stepper does not simulate them yet). State [q (nq), v (nv), act (na)];
    controls [u (nv), ctrl (nu)] ('linear') or u (nv) ('ncp'). Calls run on a copy of the model with the contact
    model set."""
    def __init__(self, contact: str = "linear", contact_params: Optional[ArrayLike] = None,
                 joint_damping: bool = True, integrator: str = "Euler", ncp: Optional[NcpSolver] = None) -> None:
        """contact: 'linear' | 'ncp'; contact_params (5,): beta in [0, 1] (Baumgarte fraction per step), e in
        [-1, 1] (restitution), gamma in [0, 1] (sliding damping), mu >= 0 (Coulomb), eps in [0, 1] (spin damping);
        'linear' only."""
    contact: str
    contact_params: Optional[List[float]]
    integrator: str
    def contact_params_for(self, model: Model) -> Optional[List[float]]:
        """(beta, e, gamma, mu, eps) used on `model` (None under contact='ncp')."""
    def initial_state(self, model: Model, q: Optional[ArrayLike] = None, v: Optional[ArrayLike] = None) -> F64: ...

Solver = Union[XpbdSolver, FeatherstoneSolver, NcpSolver, LcpSolver, TensegritySolver]

class IlqrResult:
    """What `ilqr` returns; the local policy is u_t = controls[t] + gains[t] @ solver.local_diff(model,
    states[t], x)."""
    controls: F64
    """(T, control_dim) optimised open-loop controls"""
    states: F64
    """(T + 1, state_dim) nominal states, x0 first"""
    cost_history: F64
    """initial cost, then one entry per accepted iteration (per iteration when sampled)"""
    gains: F64
    """(T, control_dim, tangent_dim) feedback gains K_t"""
    feedforward: F64
    """(T, control_dim) feedforward terms k_t of the last backward pass"""
    iterations: int
    stop: str
    """'cost_converged' | 'gradient_converged' | 'regularisation_limit' | 'max_iter' | 'iterations' (sampled)"""
    sigma: Optional[F64]
    """sampled: (T, control_dim, control_dim) policy covariances"""
    dynamics_steps: Optional[int]
    """sampled: dynamics steps taken"""

class RolloutTape:
    """A rollout that kept every step's record (`rollout_tape`)."""
    states: F64
    """(T + 1, state_dim), x0 first (equal to `rollout`'s)"""
    def vjp(self, dloss_dstates: ArrayLike, param_names: Names = None) -> RolloutGrad:
        """As rollout_vjp on these states, reading the taped records instead of re-running the steps."""
    def __len__(self) -> int: ...

class StepInfo:
    """What one step did (`step(..., return_info=True)`)."""
    solver: str
    """'xpbd', 'featherstone', 'ncp', 'lcp/jade' or 'lcp/pgs' (the LCP solver that answered)"""
    iterations: int
    contacts: int
    residual: float
    converged: bool

class RolloutGrad:
    x0: F64
    x0_tangent: F64
    controls: F64
    params: F64
    param_names: list[str]
    wrench: Optional[F64]
    """dL/dwrench in the shape `wrench` had ((T, body_count, 6) or (body_count, 6), summed over steps); None
    without wrench=."""

def load_urdf(path: Union[str, PathLike[str]], arm_root: Optional[str] = None, arm_tip: Optional[str] = None,
              drop_off_chain: bool = False) -> Model:
    """See Model.from_urdf (arm_root / arm_tip = root / tip)."""
def load_mjcf(path_or_xml: Union[str, PathLike[str]]) -> Model:
    """A str that starts with '<' (after whitespace) is parsed as MJCF text (errors name '<MJCF text>'; includes
    resolve against the working directory), anything else is a file path (FileNotFoundError if missing)."""
def _load_model(name: str) -> Model:
    """A model by registered name; use torsion.models.load."""
def _model_names() -> List[Tuple[str, str, str]]:
    """(name, description, source) of every registered model; use torsion.models.list."""
def step(model: Model, solver: Solver, x: ArrayLike, u: ArrayLike, dt: Optional[float] = None,
         return_info: bool = False, wrench: Optional[ArrayLike] = None) -> Union[F64, Tuple[F64, StepInfo]]:
    """One step (with return_info: (next state, StepInfo)). wrench: external body wrenches (body_count, 6), per
    body a world-frame force then torque at the COM (MuJoCo's xfrc_applied; not XpbdSolver). NcpSolver / LcpSolver start it cold (a flat state holds
    no contact warm start), so the same x and u always give the same result; a loop of `step` may differ from
    `rollout` at the solver's tolerance."""
def rollout(model: Model, solver: Solver, x0: ArrayLike, controls: ArrayLike, dt: Optional[float] = None,
            wrench: Optional[ArrayLike] = None) -> F64:
    """x0 (n,), controls (T, nu) -> states (T + 1, n), x0 first. wrench: (T, body_count, 6) or (body_count, 6). NcpSolver: the contact warm start is carried
    from step to step inside Rust (starting cold): deterministic, whatever the solver object's history."""
def rollout_batch(model: Model, solver: Solver, x0: ArrayLike, controls: ArrayLike, params: Optional[ArrayLike] = None,
                  param_names: Names = None, dt: Optional[float] = None) -> F64:
    """x0 (B, n) | (n,), controls (B, T, nu) | (T, nu), params (B, k) | (k,) -> (B, T + 1, n); parallel, GIL
    released; item b equals rollout() on it exactly."""
def rollout_vjp(model: Model, solver: Solver, states: ArrayLike, controls: ArrayLike, dloss_dstates: ArrayLike,
                param_names: Names = None, dt: Optional[float] = None,
                wrench: Optional[ArrayLike] = None) -> RolloutGrad:
    """Gradient of L(states) given dL/dstates (T + 1, n); param_names None = all parameters; with the rollout's
    wrench, RolloutGrad.wrench = dL/dwrench. NcpSolver: each step
    is recomputed from the warm start it had in `rollout` (the steps re-run in order from states[0])."""
def step_jacobians(model: Model, solver: Solver, x: ArrayLike, u: ArrayLike, param_names: Names = None,
                   dt: Optional[float] = None, wrench: Optional[ArrayLike] = None) -> Tuple[F64, F64, F64]:
    """(A, B, C) in tangent coordinates; C has one column per name (none by default); wrench (body_count, 6)
    held during the step."""
def trajectory_jacobians(model: Model, solver: Solver, states: ArrayLike, controls: ArrayLike,
                         param_names: Names = None, dt: Optional[float] = None) -> Tuple[F64, F64, F64]: ...
def bench_step_rust(model: Model, solver: Solver, x: ArrayLike, u: ArrayLike, n: int = 10000,
                    dt: Optional[float] = None) -> float:
    """Seconds per Solver::step timed inside Rust (prebuilt workspace): the overhead benchmark's reference."""
def rollout_tape(model: Model, solver: Solver, x0: ArrayLike, controls: ArrayLike,
                 dt: Optional[float] = None) -> RolloutTape:
    """rollout keeping each step's record: .states (T + 1, n) and .vjp(dloss_dstates, param_names) (the reverse
    pass without re-running the steps; memory one record per step)."""
def ilqr(model: Model, solver: Solver, x0: ArrayLike, horizon: int, x_ref: Optional[ArrayLike] = None,
         q: Optional[ArrayLike] = None, r: Optional[ArrayLike] = None, qf: Optional[ArrayLike] = None,
         u_ref: Optional[ArrayLike] = None, u_init: Optional[ArrayLike] = None,
         u_min: Optional[Sequence[float]] = None, u_max: Optional[Sequence[float]] = None, iterations: int = 100,
         tol_fun: float = 1e-7, tol_grad: float = 1e-4, sampled: bool = False, samples: int = 40,
         kl_weight: float = 0.005, init_sigma: float = 1.0, seed: int = 0,
         dt: Optional[float] = None) -> IlqrResult:
    """iLQR on the solver's analytic Jacobians (box-constrained controls, line search, regularisation schedule) for
    sum_t 1/2 e_t' Q e_t + 1/2 (u_t - u_ref)' R (u_t - u_ref) + 1/2 e_T' Qf e_T, e = x (-) x_ref in tangent
    coordinates. x_ref: (state_dim,) or (horizon + 1, state_dim), default x0; q, qf: (tangent_dim,) diagonal or
    (tangent_dim, tangent_dim), default 0 and 1; r: (control_dim,) or square, default 1e-3; u_ref, u_init:
    (control_dim,) or (horizon, control_dim), default 0; u_min, u_max: control_dim numbers (+-inf: none).
    sampled=True: sample-based iLQG (samples rollouts per iteration, KL weight, no Jacobians). Featherstone, Ncp,
    Lcp and Tensegrity solvers (XpbdSolver: TypeError). GIL released."""
def crba(model: Model, q: ArrayLike) -> F64: ...
def rnea(model: Model, q: ArrayLike, v: ArrayLike, a: ArrayLike) -> F64: ...
def aba(model: Model, q: ArrayLike, v: ArrayLike, tau: ArrayLike, include_passive: bool = False) -> F64:
    """q'' = ABA(q, v, tau); include_passive: ABA(q, v, tau + passive_forces(model, q, v)) (default False: tau only,
    the model's damping, springs and fluid forces ignored)."""
def passive_forces(model: Model, q: ArrayLike, v: ArrayLike) -> F64:
    """The model's passive forces (nv,): damping -d v, hinge / slide springs -k (q - springref), and the
    inertia-box fluid forces when the model has a fluid density or viscosity (MuJoCo's qfrc_passive)."""
def gravity(model: Model, q: ArrayLike) -> F64: ...
def nonlinear_effects(model: Model, q: ArrayLike, v: ArrayLike) -> F64: ...
def rnea_derivatives(model: Model, q: ArrayLike, v: ArrayLike, a: ArrayLike) -> Tuple[F64, F64, F64]: ...
def aba_derivatives(model: Model, q: ArrayLike, v: ArrayLike, tau: ArrayLike,
                    include_passive: bool = False) -> Tuple[F64, F64, F64]:
    """(dq''/dq, dq''/dv, dq''/dtau = M^-1), q in tangent coordinates; include_passive as in aba."""
def rnea_param_derivatives(model: Model, q: ArrayLike, v: ArrayLike, a: ArrayLike, param_names: Sequence[str]) -> F64: ...
def aba_param_derivatives(model: Model, q: ArrayLike, v: ArrayLike, tau: ArrayLike, param_names: Sequence[str]) -> F64: ...
def _view_html(model: Model, states: Sequence[ArrayLike], solver: _SolverBase, dt: Optional[float] = None,
               names: Optional[Sequence[str]] = None, title: Optional[str] = None,
               package_dirs: Sequence[Union[str, PathLike[str]]] = ...) -> str: ...

# torsion.sysid's Rust side (python/torsion/sysid.py builds and drives it)
class _ArmProblem:
    def __init__(self, model: Model, cutoff_hz: float = 10.0, stride: int = 1, coulomb_vs: float = 0.02,
                 filter_tau: bool = False, linear_warm_start: bool = True) -> None: ...
    names: List[str]
    body_names: List[str]
    dof_names: List[str]
    def p0(self) -> F64: ...
    def set_body(self, k: int, mode: str, value: Optional[ArrayLike] = None, prior_mean: Optional[ArrayLike] = None,
                 prior_sigma: Optional[ArrayLike] = None) -> None: ...
    def set_scalar(self, name: str, spec: dict) -> None:
        """spec: {value, transform="identity", lower=-inf, upper=inf, prior=None, fixed=False}"""
    def add_recording(self, rec: Any) -> None:
        """rec: an object with name, dt, q, tau, v (sysid._Recording)"""
    def gram(self) -> Tuple[F64, F64, float, int]: ...
    def fit(self, lm: Any, progress: bool = False,
            gram: Optional[Sequence[Tuple[ArrayLike, ArrayLike, float, int]]] = None) -> dict:
        """lm: an object with max_iter, lambda0, ftol (sysid.LevenbergMarquardt)"""
    def evaluate(self, p: ArrayLike, dt: float, q: ArrayLike, tau: ArrayLike,
                 v: Optional[ArrayLike] = None) -> Tuple[float, F64, F64]: ...
class _ShootingProblem:
    def __init__(self, model: Model, solver: Solver, names: Sequence[str], window: int = 20, sigma_q: float = 1e-3,
                 sigma_v: Optional[float] = None) -> None: ...
    names: List[str]
    def model_params(self) -> Tuple[List[str], List[float]]: ...
    def p0(self) -> F64: ...
    def set_param(self, name: str, spec: dict) -> None:
        """spec: as _ArmProblem.set_scalar's"""
    def add_recording(self, rec: Any) -> None:
        """rec: as _ArmProblem.add_recording's (tau: the controls, v required)"""
    def fit(self, lm: Any, progress: bool = False) -> dict:
        """lm: as _ArmProblem.fit's"""
    def predict(self, p: ArrayLike) -> List[F64]: ...
def _base_parameters(g: ArrayLike, tol: float = 1e-5) -> Tuple[List[int], List[int], F64]: ...
def _log_cholesky_theta(pi: ArrayLike) -> F64: ...
def _log_cholesky_params(theta: ArrayLike) -> F64: ...
def _model_restore(kind: str, args: tuple, params: ArrayLike, gravity: ArrayLike, dt: float) -> Model: ...
