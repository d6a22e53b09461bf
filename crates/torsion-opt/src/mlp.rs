//! A small fully connected network with its hand-written backward pass beside the forward (issue 19 item 1:
//! spec 003 §3.9's contact MLP, "3 fully connected layers, 100 hidden units each"). Hidden layers use `tanh` or
//! ReLU, the output layer is linear. Parameters are one flat vector (per layer the weights W, row-major out × in,
//! then the biases b), so Adam and the sysid tools see a plain θ. A forward pass records what its backward needs in
//! an [`MlpWork`]; neither allocates once the work space is built. Written here rather than taken from a crate: it
//! is ~150 lines, f64 only, and the step's reverse mode hands it one cotangent per contact (docs/decisions.md).
use torsion_math::rng::XorShift;

/// Hidden-layer nonlinearity (the output layer is linear).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Activation {
    Tanh,
    Relu,
}

impl Activation {
    fn f(self, z: f64) -> f64 {
        match self {
            Activation::Tanh => z.tanh(),
            Activation::Relu => z.max(0.0),
        }
    }
    /// dσ/dz from the pre-activation z and the activation a = σ(z) (ReLU: 0 at z = 0, a non-smooth point).
    fn df(self, z: f64, a: f64) -> f64 {
        match self {
            Activation::Tanh => 1.0 - a * a,
            Activation::Relu => {
                if z > 0.0 {
                    1.0
                } else {
                    0.0
                }
            }
        }
    }
}

/// A multilayer perceptron y = W_L σ(… σ(W_1 x + b_1) …) + b_L.
#[derive(Clone, Debug)]
pub struct Mlp {
    /// layer widths, input first, output last (at least two)
    pub sizes: Vec<usize>,
    pub activation: Activation,
    /// the flat parameters: per layer W (row-major, out × in) then b
    pub params: Vec<f64>,
}

/// Per-layer pre-activations and activations of the last forward pass, and the backward pass's scratch.
#[derive(Clone, Debug)]
pub struct MlpWork {
    /// z_l = W_l a_{l−1} + b_l, l = 1..L
    z: Vec<Vec<f64>>,
    /// a_0 = x, a_l = σ(z_l) (a_L = z_L)
    a: Vec<Vec<f64>>,
    /// two cotangent buffers of the widest layer
    g: [Vec<f64>; 2],
}

impl Mlp {
    /// Glorot-uniform weights (bound √(6 / (in + out))) and zero biases from a seeded generator: the same seed
    /// gives the same network. Panics on fewer than two layer sizes or a zero width (a programming error).
    pub fn new(sizes: &[usize], activation: Activation, seed: u64) -> Self {
        assert!(sizes.len() >= 2 && sizes.iter().all(|&n| n > 0), "Mlp::new: need ≥ 2 positive layer sizes");
        let mut rng = XorShift(seed.max(1));
        let mut params = Vec::new();
        for w in sizes.windows(2) {
            let bound = (6.0 / (w[0] + w[1]) as f64).sqrt();
            params.extend((0..w[0] * w[1]).map(|_| bound * rng.sym()));
            params.extend(std::iter::repeat_n(0.0, w[1]));
        }
        Mlp { sizes: sizes.to_vec(), activation, params }
    }

    pub fn n_params(&self) -> usize {
        self.params.len()
    }
    pub fn n_in(&self) -> usize {
        self.sizes[0]
    }
    pub fn n_out(&self) -> usize {
        *self.sizes.last().unwrap()
    }

    pub fn workspace(&self) -> MlpWork {
        let widest = *self.sizes.iter().max().unwrap();
        MlpWork {
            z: self.sizes[1..].iter().map(|&n| vec![0.0; n]).collect(),
            a: self.sizes.iter().map(|&n| vec![0.0; n]).collect(),
            g: [vec![0.0; widest], vec![0.0; widest]],
        }
    }

    /// y = f(x); records the layers in `ws` for [`Mlp::backward`].
    pub fn forward(&self, x: &[f64], ws: &mut MlpWork, y: &mut [f64]) {
        assert!(x.len() == self.n_in() && y.len() == self.n_out(), "Mlp::forward: input / output length");
        ws.a[0].copy_from_slice(x);
        let (nl, mut off) = (self.sizes.len() - 1, 0);
        for l in 0..nl {
            let (ni, no) = (self.sizes[l], self.sizes[l + 1]);
            let (w, b) = (&self.params[off..off + ni * no], &self.params[off + ni * no..off + ni * no + no]);
            let (prev, rest) = ws.a.split_at_mut(l + 1);
            for r in 0..no {
                let z = b[r] + w[r * ni..(r + 1) * ni].iter().zip(&prev[l]).map(|(wi, ai)| wi * ai).sum::<f64>();
                ws.z[l][r] = z;
                rest[0][r] = if l + 1 == nl { z } else { self.activation.f(z) };
            }
            off += ni * no + no;
        }
        y.copy_from_slice(&ws.a[nl]);
    }

    /// Reverse mode at the last forward pass: `g_params += (∂y/∂θ)ᵀ g_y`, and `g_x = (∂y/∂x)ᵀ g_y` if given.
    pub fn backward(&self, ws: &mut MlpWork, g_y: &[f64], g_params: &mut [f64], g_x: Option<&mut [f64]>) {
        assert!(g_y.len() == self.n_out() && g_params.len() == self.n_params(), "Mlp::backward: lengths");
        let nl = self.sizes.len() - 1;
        let [cur, nxt] = &mut ws.g;
        cur[..g_y.len()].copy_from_slice(g_y); // ḡ_z of the (linear) output layer
        let mut off = self.n_params();
        for l in (0..nl).rev() {
            let (ni, no) = (self.sizes[l], self.sizes[l + 1]);
            off -= ni * no + no;
            let w = &self.params[off..off + ni * no];
            let (gw, gb) = g_params[off..off + ni * no + no].split_at_mut(ni * no);
            for r in 0..no {
                gb[r] += cur[r];
                for c in 0..ni {
                    gw[r * ni + c] += cur[r] * ws.a[l][c];
                }
            }
            // ḡ_a_{l−1} = Wᵀ ḡ_z, then through σ of the layer below (none below the input)
            for c in 0..ni {
                let mut s = 0.0;
                for r in 0..no {
                    s += w[r * ni + c] * cur[r];
                }
                nxt[c] = if l > 0 { s * self.activation.df(ws.z[l - 1][c], ws.a[l][c]) } else { s };
            }
            std::mem::swap(cur, nxt);
        }
        if let Some(gx) = g_x {
            gx.copy_from_slice(&cur[..self.n_in()]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Central differences of ⟨c, f(x; θ)⟩ w.r.t. every parameter and input against `backward`, for both
    /// activations (ReLU away from its kink: the random pre-activations are never 0).
    #[test]
    fn backward_matches_central_differences() {
        for act in [Activation::Tanh, Activation::Relu] {
            let net = Mlp::new(&[5, 7, 6, 3], act, 11);
            let mut rng = XorShift(3);
            let x: Vec<f64> = (0..5).map(|_| rng.sym()).collect();
            let c: Vec<f64> = (0..3).map(|_| rng.sym()).collect();
            let mut net = net;
            for p in net.params.iter_mut() {
                *p += 0.1 * rng.sym(); // nonzero biases too
            }
            let f = |n: &Mlp, x: &[f64]| {
                let (mut ws, mut y) = (n.workspace(), vec![0.0; 3]);
                n.forward(x, &mut ws, &mut y);
                y.iter().zip(&c).map(|(a, b)| a * b).sum::<f64>()
            };
            let mut ws = net.workspace();
            let mut y = vec![0.0; 3];
            net.forward(&x, &mut ws, &mut y);
            let (mut gp, mut gx) = (vec![0.0; net.n_params()], vec![0.0; 5]);
            net.backward(&mut ws, &c, &mut gp, Some(&mut gx));
            let h = 1e-6;
            let mut fd_p = vec![0.0; net.n_params()];
            for i in 0..net.n_params() {
                let (mut a, mut b) = (net.clone(), net.clone());
                a.params[i] += h;
                b.params[i] -= h;
                fd_p[i] = (f(&a, &x) - f(&b, &x)) / (2.0 * h);
            }
            let fd_x: Vec<f64> = (0..5)
                .map(|i| {
                    let (mut a, mut b) = (x.clone(), x.clone());
                    a[i] += h;
                    b[i] -= h;
                    (f(&net, &a) - f(&net, &b)) / (2.0 * h)
                })
                .collect();
            let rel = |a: &[f64], b: &[f64]| {
                let d: f64 = a.iter().zip(b).map(|(p, q)| (p - q).powi(2)).sum::<f64>().sqrt();
                d / b.iter().map(|q| q * q).sum::<f64>().sqrt().max(1e-300)
            };
            let (ep, ex) = (rel(&gp, &fd_p), rel(&gx, &fd_x));
            eprintln!("{act:?}: params {ep:.1e}, inputs {ex:.1e}");
            assert!(ep < 1e-8 && ex < 1e-8, "{act:?}: params {ep:.1e}, inputs {ex:.1e}");
            // backward accumulates into g_params
            net.backward(&mut ws, &c, &mut gp, None);
            assert!(rel(&gp, &fd_p.iter().map(|v| 2.0 * v).collect::<Vec<_>>()) < 1e-8);
        }
    }

    /// The forward pass against a hand evaluation of a 2-2-1 tanh network; the same seed gives the same weights.
    #[test]
    fn forward_matches_a_hand_evaluation_and_seeds_repeat() {
        let mut n = Mlp::new(&[2, 2, 1], Activation::Tanh, 5);
        n.params = vec![0.5, -1.0, 2.0, 0.25, 0.1, -0.2, 1.5, -3.0, 0.7];
        let x = [0.3, -0.4];
        let h = [(0.5 * 0.3 + 1.0 * 0.4 + 0.1f64).tanh(), (2.0 * 0.3 - 0.25 * 0.4 - 0.2f64).tanh()];
        let want = 1.5 * h[0] - 3.0 * h[1] + 0.7;
        let (mut ws, mut y) = (n.workspace(), [0.0]);
        n.forward(&x, &mut ws, &mut y);
        assert!((y[0] - want).abs() < 1e-15, "{} vs {want}", y[0]);
        assert_eq!(
            Mlp::new(&[29, 100, 6], Activation::Relu, 9).params,
            Mlp::new(&[29, 100, 6], Activation::Relu, 9).params
        );
        assert_ne!(
            Mlp::new(&[29, 100, 6], Activation::Relu, 9).params,
            Mlp::new(&[29, 100, 6], Activation::Relu, 10).params
        );
    }
}
