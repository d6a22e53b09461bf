//! Sparse Delassus assembly (spec 001 §3.1, §6 item 17) and contact islands. With M = Lᵀ L (Featherstone's
//! LTL, `torsion_dynamics::ltl`): W = J M⁻¹ Jᵀ = YᵀY, Y = L⁻ᵀ Jᵀ. A contact's Jacobian rows touch only the DoFs of
//! its two bodies' ancestor chains (its *support*, ancestor-closed), and the solve with Lᵀ stays on that support,
//! so Y is computed per contact on its support alone. Two supports intersect iff the contacts share a root DoF
//! (the top of a moving tree), and only those 3 × 3 blocks of W are non-zero and computed. Contacts that share
//! no moving tree form independent problems: the connected components of the contact graph over root DoFs are
//! the *islands* (a fixed body, the ground, connects nothing), and the staggered passes solve each island's QP /
//! QCQP on its own — the same solution, as W is block diagonal over islands. Generic over the scalar.
use super::buffers::reshape_zeroed;
use nalgebra::DMatrix;
use torsion_dynamics::ltl::{lt_solve_on3, TreeMatrix, NO_DOF};
use torsion_dynamics::DynModel;
use torsion_math::Scalar;

use super::frames::ContactGeom;

/// Which DoFs each contact touches, and the islands.
#[derive(Clone, Debug, Default)]
pub struct ContactPattern {
    /// contact c's support: `dofs[start[c]..start[c + 1]]`, ascending
    pub start: Vec<usize>,
    pub dofs: Vec<usize>,
    /// the root DoFs of body A's and body B's chains (NO_DOF for a fixed body)
    pub roots: Vec<[usize; 2]>,
    /// contacts of each island, ascending (islands ordered by their first contact)
    pub islands: Vec<Vec<usize>>,
    /// each contact's island and its position in it: `islands[island[c]][local[c]] == c`
    pub island: Vec<usize>,
    pub local: Vec<usize>,
    /// `fill`'s scratch: island lists kept for reuse, the union-find over root DoFs, each root's island
    spare: Vec<Vec<usize>>,
    up: Vec<usize>,
    island_of_root: Vec<usize>,
}

/// The root of x in the union-find forest `up` (path halving).
pub(crate) fn uf_root(up: &mut [usize], mut x: usize) -> usize {
    while up[x] != x {
        up[x] = up[up[x]];
        x = up[x];
    }
    x
}

impl ContactPattern {
    /// From λ (`ltl::dof_parents`) and the joint moving each body (`kinematics::body_joints`).
    pub fn new<T: Scalar>(
        dm: &DynModel<T>,
        lambda: &[usize],
        body_joint: &[usize],
        contacts: &[ContactGeom<T>],
    ) -> Self {
        let mut pat = ContactPattern::default();
        pat.fill(dm, lambda, body_joint, contacts);
        pat
    }

    /// [`ContactPattern::new`] in place, reusing the lists (no allocation once they have grown).
    pub fn fill<T: Scalar>(
        &mut self,
        dm: &DynModel<T>,
        lambda: &[usize],
        body_joint: &[usize],
        contacts: &[ContactGeom<T>],
    ) {
        // the deepest DoF moving a body: its joint's last DoF, else (a 0-DoF joint) that of the body above
        let deepest = |body: usize| -> usize {
            let mut b = body;
            while b < body_joint.len() && body_joint[b] != usize::MAX {
                let j = body_joint[b];
                if dm.joint[j].nv > 0 {
                    return dm.v_start[j] + dm.joint[j].nv - 1;
                }
                b = dm.parent[j];
            }
            NO_DOF
        };
        let pat = self;
        pat.start.clear();
        pat.dofs.clear();
        pat.roots.clear();
        while let Some(mut isl) = pat.islands.pop() {
            isl.clear();
            pat.spare.push(isl);
        }
        pat.start.push(0);
        for c in contacts {
            // the two chains, each descending (λ(i) < i), merged into one ascending list without repeats
            let (mut a, mut b) = (deepest(c.body_a), deepest(c.body_b));
            let mut root = [NO_DOF; 2];
            let s0 = pat.dofs.len();
            while a != NO_DOF || b != NO_DOF {
                let k = if a == NO_DOF {
                    b
                } else if b == NO_DOF {
                    a
                } else {
                    a.max(b)
                };
                pat.dofs.push(k);
                if a == k {
                    if lambda[a] == NO_DOF {
                        root[0] = a;
                    }
                    a = lambda[a];
                }
                if b == k {
                    if lambda[b] == NO_DOF {
                        root[1] = b;
                    }
                    b = lambda[b];
                }
            }
            pat.dofs[s0..].reverse();
            pat.start.push(pat.dofs.len());
            pat.roots.push(root);
        }
        // islands: union-find over root DoFs
        let nv = lambda.len();
        let up = &mut pat.up;
        up.clear();
        up.extend(0..nv);
        for r in &pat.roots {
            if r[0] != NO_DOF && r[1] != NO_DOF {
                let (x, y) = (uf_root(up, r[0]), uf_root(up, r[1]));
                up[x.max(y)] = x.min(y);
            }
        }
        let island_of_root = &mut pat.island_of_root;
        island_of_root.clear();
        island_of_root.resize(nv, usize::MAX);
        for (c, r) in pat.roots.iter().enumerate() {
            let any = if r[0] != NO_DOF { r[0] } else { r[1] };
            if any == NO_DOF {
                // between fixed bodies: touches nothing, an island of its own
                let mut isl = pat.spare.pop().unwrap_or_default();
                isl.push(c);
                pat.islands.push(isl);
                continue;
            }
            let k = uf_root(up, any);
            if island_of_root[k] == usize::MAX {
                island_of_root[k] = pat.islands.len();
                pat.islands.push(pat.spare.pop().unwrap_or_default());
            }
            pat.islands[island_of_root[k]].push(c);
        }
        pat.island.clear();
        pat.island.resize(pat.roots.len(), 0);
        pat.local.clear();
        pat.local.resize(pat.roots.len(), 0);
        for (k, isl) in pat.islands.iter().enumerate() {
            for (a, &c) in isl.iter().enumerate() {
                pat.island[c] = k;
                pat.local[c] = a;
            }
        }
    }

    pub fn support(&self, c: usize) -> &[usize] {
        &self.dofs[self.start[c]..self.start[c + 1]]
    }
}

/// The buffers of [`assemble_with`]: Y on the supports, a dense column, the contacts by root DoF.
pub(crate) struct DelassusScratch<T: Scalar> {
    y: Vec<T>,
    /// a contact's three rows (n, t1, t2) per DoF
    w: Vec<[T; 3]>,
    by_root: Vec<Vec<usize>>,
}

impl<T: Scalar> Default for DelassusScratch<T> {
    fn default() -> Self {
        DelassusScratch { y: vec![], w: vec![], by_root: vec![] }
    }
}

/// One island's blocks of the Delassus matrix W = J M⁻¹ Jᵀ (its contacts in `ContactPattern::islands` order):
/// G_n (m × m), G_t (2m × 2m), G_nt (m × 2m). W is block diagonal over islands, so these are all of it.
#[derive(Clone, Debug)]
pub struct IslandBlocks<T: Scalar> {
    pub gn: DMatrix<T>,
    pub gt: DMatrix<T>,
    pub gnt: DMatrix<T>,
}

impl<T: Scalar> Default for IslandBlocks<T> {
    fn default() -> Self {
        let e = || DMatrix::from_vec(0, 0, Vec::new());
        IslandBlocks { gn: e(), gt: e(), gnt: e() }
    }
}

/// Y = L⁻ᵀ Jᵀ on the supports (`rows`: the Jacobians on the supports, `frames::contact_rows`) and the non-zero
/// blocks of W = YᵀY written into each island's blocks (`blocks[k]` for island k; the list grows, is never
/// shortened) and, when `dense` is given, into G_n (nc × nc), G_t (2nc × 2nc), G_nt (nc × 2nc) (zero elsewhere);
/// with reused buffers (no allocation once they have grown). `l`, `lambda`: M = Lᵀ L from `ltl_in_place`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn assemble_with<T: Scalar>(
    l: &TreeMatrix<T>,
    lambda: &[usize],
    rows: &[T],
    pat: &ContactPattern,
    blocks: &mut Vec<IslandBlocks<T>>,
    mut dense: DenseG<'_, T>,
    sc: &mut DelassusScratch<T>,
) {
    let nc = pat.roots.len();
    let nv = lambda.len();
    // y[3 (start[c] + p) + m]: row m (n, t1, t2) of contact c at its p-th support DoF
    let DelassusScratch { y, w, by_root } = sc;
    y.clear();
    y.resize(3 * pat.dofs.len(), T::zero());
    w.clear();
    w.resize(nv, [T::zero(); 3]);
    for c in 0..nc {
        // the contact's three rows at once (the same operations per row as one by one)
        let sup = pat.support(c);
        let (rc, yc) = (&rows[3 * pat.start[c]..3 * pat.start[c + 1]], &mut y[3 * pat.start[c]..3 * pat.start[c + 1]]);
        for (&k, r) in sup.iter().zip(rc.chunks_exact(3)) {
            w[k] = [r[0], r[1], r[2]];
        }
        lt_solve_on3(l, lambda, w, sup);
        for (&k, yk) in sup.iter().zip(yc.chunks_exact_mut(3)) {
            yk.copy_from_slice(&w[k]);
            w[k] = [T::zero(); 3];
        }
    }
    zeroed_blocks(pat, blocks, &mut dense);
    // contacts by root DoF; a pair sharing two roots is computed under the smaller one
    by_root.iter_mut().for_each(|b| b.clear());
    by_root.resize_with(nv.max(by_root.len()), Vec::new);
    for (c, r) in pat.roots.iter().enumerate() {
        for (i, &x) in r.iter().enumerate() {
            if x != NO_DOF && (i == 0 || x != r[0]) {
                by_root[x].push(c);
            }
        }
    }
    let shared_min = |a: &[usize; 2], b: &[usize; 2]| -> usize {
        let mut s = NO_DOF;
        for &x in a {
            if x != NO_DOF && b.contains(&x) {
                s = s.min(x);
            }
        }
        s
    };
    for (r, list) in by_root.iter().enumerate() {
        for (ia, &c) in list.iter().enumerate() {
            for &d in &list[ia..] {
                if shared_min(&pat.roots[c], &pat.roots[d]) != r {
                    continue;
                }
                // B = Y_cᵀ Y_d over the common support (merge of two ascending lists, ascending), each contact's
                // Y rows 3 per support DoF
                let mut blk = [[T::zero(); 3]; 3];
                let mac = |blk: &mut [[T; 3]; 3], u: &[T], w: &[T]| {
                    for a in 0..3 {
                        for b in 0..3 {
                            blk[a][b] += u[a] * w[b];
                        }
                    }
                };
                let (sc, sd) = (pat.support(c), pat.support(d));
                let (yc, yd) = (&y[3 * pat.start[c]..3 * pat.start[c + 1]], &y[3 * pat.start[d]..3 * pat.start[d + 1]]);
                if sc == sd {
                    // (two contacts of one body pair: the whole support in common)
                    yc.chunks_exact(3).zip(yd.chunks_exact(3)).for_each(|(u, w)| mac(&mut blk, u, w));
                } else {
                    let mut yd = sd.iter().zip(yd.chunks_exact(3));
                    let mut next_d = yd.next();
                    for (kc, u) in sc.iter().zip(yc.chunks_exact(3)) {
                        while next_d.is_some_and(|(kd, _)| kd < kc) {
                            next_d = yd.next();
                        }
                        let Some((kd, w)) = next_d else { break };
                        if kd == kc {
                            mac(&mut blk, u, w);
                            next_d = yd.next();
                        }
                    }
                }
                // c and d share a tree: the same island
                put_pair(pat, blocks, &mut dense, c, d, &blk);
            }
        }
    }
}

/// The dense G's of [`assemble_with`], when given.
type DenseG<'a, T> = Option<(&'a mut DMatrix<T>, &'a mut DMatrix<T>, &'a mut DMatrix<T>)>;

/// Each island's blocks (and the dense G, when given) zeroed at their sizes, reusing their storage.
fn zeroed_blocks<T: Scalar>(pat: &ContactPattern, blocks: &mut Vec<IslandBlocks<T>>, dense: &mut DenseG<'_, T>) {
    let nc = pat.roots.len();
    if blocks.len() < pat.islands.len() {
        blocks.resize_with(pat.islands.len(), IslandBlocks::default);
    }
    for (b, isl) in blocks.iter_mut().zip(&pat.islands) {
        let m = isl.len();
        reshape_zeroed(&mut b.gn, m, m);
        reshape_zeroed(&mut b.gt, 2 * m, 2 * m);
        reshape_zeroed(&mut b.gnt, m, 2 * m);
    }
    if let Some((gn, gt, gnt)) = dense.as_mut() {
        reshape_zeroed(gn, nc, nc);
        reshape_zeroed(gt, 2 * nc, 2 * nc);
        reshape_zeroed(gnt, nc, 2 * nc);
    }
}

/// The 3 × 3 block B = W_cd (rows n, t1, t2 of contacts c, d of one island) at (c, d) and (d, c) of the island's
/// G_n, G_t, G_nt, and of the dense G when given.
fn put_pair<T: Scalar>(
    pat: &ContactPattern,
    blocks: &mut [IslandBlocks<T>],
    dense: &mut DenseG<'_, T>,
    c: usize,
    d: usize,
    blk: &[[T; 3]; 3],
) {
    fn put<T: Scalar>(
        gn: &mut DMatrix<T>,
        gt: &mut DMatrix<T>,
        gnt: &mut DMatrix<T>,
        c: usize,
        d: usize,
        blk: &[[T; 3]; 3],
    ) {
        gn[(c, d)] = blk[0][0];
        gn[(d, c)] = blk[0][0];
        for b in 0..2 {
            gnt[(c, 2 * d + b)] = blk[0][1 + b];
            gnt[(d, 2 * c + b)] = blk[1 + b][0];
            for a in 0..2 {
                gt[(2 * c + a, 2 * d + b)] = blk[1 + a][1 + b];
                gt[(2 * d + b, 2 * c + a)] = blk[1 + a][1 + b];
            }
        }
    }
    let b = &mut blocks[pat.island[c]];
    put(&mut b.gn, &mut b.gt, &mut b.gnt, pat.local[c], pat.local[d], blk);
    if let Some((gn, gt, gnt)) = dense.as_mut() {
        put(gn, gt, gnt, c, d, blk);
    }
}

/// The islands' blocks of W = J (M⁻¹ Jᵀ) from the columns M⁻¹ J_rᵀ (`cols[r nv..(r + 1) nv]`, row r = 3c + m of
/// contact c; `prelude::MassSolve::Aba`) and the Jacobian rows on the supports: W_(c,a),(d,b) = J_(c,a) · M⁻¹
/// J_(d,b)ᵀ for the contacts of each island, O(k² · support) for an island of k contacts; as
/// [`assemble_with`], into `blocks` and the dense G when given.
pub(crate) fn assemble_from_columns<T: Scalar>(
    rows: &[T],
    pat: &ContactPattern,
    cols: &[T],
    nv: usize,
    blocks: &mut Vec<IslandBlocks<T>>,
    mut dense: DenseG<'_, T>,
) {
    zeroed_blocks(pat, blocks, &mut dense);
    for isl in &pat.islands {
        for (ia, &c) in isl.iter().enumerate() {
            let (sup, s0) = (pat.support(c), pat.start[c]);
            for &d in &isl[ia..] {
                let mut blk = [[T::zero(); 3]; 3];
                for (a, row) in blk.iter_mut().enumerate() {
                    for (b, x) in row.iter_mut().enumerate() {
                        let col = &cols[(3 * d + b) * nv..(3 * d + b + 1) * nv];
                        *x = sup
                            .iter()
                            .enumerate()
                            .fold(T::zero(), |acc, (p, &k)| acc + rows[3 * (s0 + p) + a] * col[k]);
                    }
                }
                put_pair(pat, blocks, &mut dense, c, d, &blk);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::frames::{body_joints, contact_jacobians};
    use super::super::prelude::{apply_impulses, prelude, PreludeOptions, StepInputs};
    use super::*;
    use torsion_dynamics::{crba, forward_kinematics, nonlinear_effects, DynData};
    use torsion_math::Vec3;

    /// 5 free boxes and a 3-link hinge chain hanging from a fixed base, and a 2-link chain on a free base.
    fn scene() -> torsion_model::Model {
        let mut bodies = String::new();
        for k in 0..5 {
            bodies += &format!(
                r#"<body pos="{} 0.1 {}" euler="0.1 0.2 {}"><freejoint/><geom type="box" size="0.1 0.2 0.1" mass="{}"/></body>"#,
                0.3 * k as f64,
                0.1 + 0.05 * k as f64,
                0.3 * k as f64,
                1.0 + 0.2 * k as f64
            );
        }
        let chain = r#"<body pos="0 1 1"><joint type="hinge" axis="1 0 0"/><geom type="capsule" fromto="0 0 0 0 0 -0.4" size="0.05" mass="0.7"/>
              <body pos="0 0 -0.4"><joint type="hinge" axis="0 1 0"/><geom type="capsule" fromto="0 0 0 0 0 -0.4" size="0.05" mass="0.5"/>
                <body pos="0 0 -0.4"><joint type="hinge" axis="1 1 0"/><geom type="capsule" fromto="0 0 0 0 0 -0.3" size="0.05" mass="0.3"/></body>
              </body></body>
            <body pos="2 2 0.5"><freejoint/><geom type="sphere" size="0.1" mass="2"/>
              <body pos="0.2 0 0"><joint type="hinge" axis="0 0 1"/><geom type="sphere" size="0.05" mass="0.4"/>
                <body pos="0.2 0 0"><joint type="hinge" axis="0 1 0"/><geom type="sphere" size="0.05" mass="0.3"/></body>
              </body></body>"#;
        let xml = format!(
            r#"<mujoco><option gravity="0 0 -9.81"/><worldbody><geom type="plane" size="5 5 0.1"/>{bodies}{chain}</worldbody></mujoco>"#
        );
        torsion_model::io::mjcf::load_mjcf_str(&xml, "scene.xml", None).unwrap()
    }

    /// The sparse prelude (LTL factor, Y on the supports, only the non-zero blocks of W) against the dense path
    /// (Cholesky of M, Y = L⁻¹ Jᵀ over all DoFs, W = YᵀY): G_n, G_t, G_nt, v^p, b_n, b_t and M⁻¹ solves agree to
    /// rounding; the islands are the connected components over moving trees.
    #[test]
    fn sparse_prelude_matches_dense_delassus() {
        let m = scene();
        let dm = DynModel::<f64>::from_model(&m).unwrap();
        let mut d = DynData::new(&dm);
        let mut bj = vec![];
        body_joints(&dm, &mut bj);
        let nv = dm.nv;
        let mut q = m.qpos0.clone();
        for (i, x) in q.iter_mut().enumerate() {
            *x += 0.05 * (i as f64 * 1.3).sin();
        }
        let v: Vec<f64> = (0..nv).map(|i| 0.3 * (i as f64 * 0.9).cos()).collect();
        let u: Vec<f64> = (0..nv).map(|i| 0.2 * (i as f64 * 0.4).sin()).collect();
        forward_kinematics(&dm, &q, &mut d);
        let geom = |a: usize, b: usize, k: usize| {
            let n = Vec3::new(0.1 * k as f64, -0.2, 1.0).normalize();
            let t1 = n.cross(&Vec3::x()).normalize();
            ContactGeom {
                body_a: a,
                body_b: b,
                point: Vec3::new(0.1 * k as f64, 0.5 - 0.05 * k as f64, 0.2),
                normal: n,
                tangents: [t1, n.cross(&t1)],
                distance: -1e-3 * (k as f64 - 4.0),
                mu: 0.5,
                restitution: 0.3,
            }
        };
        // bodies: 0 world, 1–5 boxes, 6–8 hinge chain, 9 free base, 10–11 its links
        let pairs = [(1, 0), (2, 1), (3, 2), (2, 3), (4, 0), (8, 5), (7, 0), (8, 6), (11, 9), (10, 0), (6, 0), (0, 0)];
        let contacts: Vec<_> = pairs.iter().enumerate().map(|(k, &(a, b))| geom(a, b, k)).collect();
        let nc = contacts.len();
        let o = PreludeOptions { solver: "test", passive: true, baumgarte: 3.0 };
        let x = StepInputs {
            model: &m,
            dm: &dm,
            body_joint: &bj,
            q: &q,
            v: &v,
            u: &u,
            dt: 0.01,
            contacts: &contacts,
            o: &o,
        };
        let pre = prelude(&x, &mut d).unwrap();
        // dense reference
        let mut dd = DynData::new(&dm);
        let mm = crba(&dm, &q, &mut dd).unwrap();
        let chol = mm.clone().cholesky().unwrap();
        let bias = nonlinear_effects(&dm, &q, &v, &mut dd).unwrap();
        let passive = torsion_dynamics::passive::passive_forces(&m, &q, &v).unwrap();
        let tau = nalgebra::DVector::from_iterator(nv, (0..nv).map(|k| u[k] - bias[k] + passive[k]));
        let mut vp = nalgebra::DVector::from_column_slice(&v) + 0.01 * chol.solve(&tau);
        torsion_dynamics::gyroscopic::implicit_gyroscopic(&dm, &v, 0.01, vp.as_mut_slice());
        torsion_dynamics::joints::add_free_frame_term(&dm, &v, 0.01, vp.as_mut_slice());
        let (mut jn, mut jt) = (DMatrix::zeros(nc, nv), DMatrix::zeros(2 * nc, nv));
        forward_kinematics(&dm, &q, &mut dd);
        contact_jacobians(&dm, &dd, &bj, &contacts, &mut jn, &mut jt);
        let mut jall = DMatrix::zeros(3 * nc, nv);
        jall.rows_mut(0, nc).copy_from(&jn);
        jall.rows_mut(nc, 2 * nc).copy_from(&jt);
        let y = chol.l().solve_lower_triangular(&jall.transpose()).unwrap();
        let g = y.transpose() * &y;
        let scale = g.abs().max();
        let close = |a: &DMatrix<f64>, b: DMatrix<f64>, what: &str| {
            let e = (a - &b).abs().max();
            assert!(e <= 1e-12 * scale, "{what}: sparse vs dense {e:e} (scale {scale:e})");
        };
        close(&pre.gn, g.view((0, 0), (nc, nc)).into_owned(), "G_n");
        close(&pre.gt, g.view((nc, nc), (2 * nc, 2 * nc)).into_owned(), "G_t");
        close(&pre.gnt, g.view((0, nc), (nc, 2 * nc)).into_owned(), "G_nt");
        assert!(g.abs().max() > 0.1, "a non-trivial Delassus matrix");
        let e = (0..nv).map(|k| (pre.vp[k] - vp[k]).abs()).fold(0.0, f64::max);
        assert!(e < 1e-12 * vp.abs().max().max(1.0), "v^p: {e:e}");
        let (jvp, jv) = (&jn * &vp, &jn * nalgebra::DVector::from_column_slice(&v));
        let mut branches = [0; 2];
        for i in 0..nc {
            let c = &contacts[i];
            // the step: J_n v^p + φ⁺/Δt − K e; the impact: J_n v, plus φ⁺/Δt unless struck (touching, or ε > 0 and
            // closing within the step; docs/decisions.md row 9a)
            let gap = c.distance.max(0.0);
            let bn = jvp[i] + gap / 0.01 - 3.0 * (-c.distance).max(0.0);
            assert!((pre.bn[i] - bn).abs() < 1e-12 * bn.abs().max(1.0), "b_n[{i}]");
            let struck = c.distance <= 0.0 || jv[i] * 0.01 + gap <= 0.0;
            branches[struck as usize] += 1;
            let bi = if struck { jv[i] } else { jv[i] + gap / 0.01 };
            assert!((pre.bn_impact[i] - bi).abs() < 1e-12 * bi.abs().max(1.0), "impact b_n[{i}]");
        }
        assert!(branches[0] > 0 && branches[1] > 0, "both impact offset branches: {branches:?}");
        let jtv = &jt * nalgebra::DVector::from_column_slice(&v);
        assert!((0..2 * nc).all(|r| (pre.bt_impact[r] - jtv[r]).abs() < 1e-12 * jtv[r].abs().max(1.0)), "impact b_t");
        let jtvp = &jt * &vp;
        assert!((0..2 * nc).all(|r| (pre.bt[r] - jtvp[r]).abs() < 1e-12 * jtvp[r].abs().max(1.0)), "b_t");
        // v⁺ = v^p + M⁻¹ Jᵀ λ
        let ln: Vec<f64> = (0..nc).map(|i| 0.1 + 0.01 * i as f64).collect();
        let lt: Vec<f64> = (0..2 * nc).map(|i| 0.02 * (i as f64).sin()).collect();
        let vplus = apply_impulses(&pre, &ln, &lt);
        let f = jn.transpose() * nalgebra::DVector::from_vec(ln) + jt.transpose() * nalgebra::DVector::from_vec(lt);
        let vref = &vp + chol.solve(&f);
        let e = (0..nv).map(|k| (vplus[k] - vref[k]).abs()).fold(0.0, f64::max);
        assert!(e < 1e-12 * vref.abs().max().max(1.0), "v⁺: {e:e}");
        // islands: {0,1,2,3} (boxes 1–3), {4} (box 4), {5,6,7} (box 5 and the hinge chain), {8,9}, {10}, {11}
        let want: Vec<Vec<usize>> = vec![vec![0, 1, 2, 3], vec![4], vec![5, 6, 7, 10], vec![8, 9], vec![11]];
        assert_eq!(pre.pattern.islands, want);
    }
}
