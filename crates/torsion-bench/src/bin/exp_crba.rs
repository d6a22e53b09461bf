use std::hint::black_box;
use std::time::Instant;
use torsion_dynamics::{DynData, DynModel};
fn main() {
    let m = torsion_model::io::robots::baxter_left_arm().unwrap();
    let dm: DynModel<f64> = DynModel::from_model(&m).unwrap();
    let mut d = DynData::new(&dm);
    let qs: Vec<Vec<f64>> =
        (0..200).map(|i| (0..7).map(|k| ((i * 7 + k) as f64 * 0.37).sin() * 3.0).collect()).collect();
    let mut mm = nalgebra::DMatrix::zeros(7, 7);
    let n = 1_000_000;
    for rep in 0..3 {
        let t = Instant::now();
        for i in 0..n {
            torsion_dynamics::fk::local_kinematics(&dm, &qs[i % 200], &mut d);
            black_box(&d.x_pc);
        }
        let a = t.elapsed().as_secs_f64() * 1e6 / n as f64;
        let t = Instant::now();
        for i in 0..n {
            torsion_dynamics::forward_kinematics(&dm, &qs[i % 200], &mut d);
            black_box(&d.o_m);
        }
        let b = t.elapsed().as_secs_f64() * 1e6 / n as f64;
        let t = Instant::now();
        for i in 0..n {
            torsion_dynamics::forward_kinematics(&dm, &qs[i % 200], &mut d);
            torsion_dynamics::crba::world_columns(&dm, &mut d);
            black_box(&d);
        }
        let c = t.elapsed().as_secs_f64() * 1e6 / n as f64;
        let t = Instant::now();
        for i in 0..n {
            torsion_dynamics::crba_into(&dm, &qs[i % 200], &mut d, &mut mm).unwrap();
            black_box(&mm);
        }
        let e = t.elapsed().as_secs_f64() * 1e6 / n as f64;
        let t = Instant::now();
        let mut acc = 0.0;
        for i in 0..n {
            for k in 0..7 {
                let (s, c) = qs[i % 200][k].sin_cos();
                acc += s * c;
            }
        }
        black_box(acc);
        let f = t.elapsed().as_secs_f64() * 1e6 / n as f64;
        println!("rep {rep}: sincos×7 {f:.3} local_fk {a:.3} fk {b:.3} fk+world {c:.3} crba {e:.3}");
    }
}
