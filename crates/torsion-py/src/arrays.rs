//! NumPy input/output: inputs are float64 ndarrays, float32 ndarrays (up-cast exactly to float64 on every path,
//! docs/decisions.md "float32 from Python"; results are float64) or nested Python sequences of numbers (converted
//! with `numpy.asarray(x, dtype=float64)`); any other dtype is a TypeError naming the argument. Shapes are checked
//! against what the call needs and a mismatch is a ValueError naming the argument and the expected shape.
//! Every value must be finite (a NaN or ±inf is a ValueError naming the argument and the entry, issue 20);
//! big-endian (non-native byte order) float64 / float32 arrays are converted. Result buffers sized by user
//! shapes are allocated through [`alloc`], which raises MemoryError instead of aborting the interpreter.
use numpy::ndarray::{ArrayD, IxDyn};
use numpy::prelude::*;
use numpy::{dtype, PyArrayDyn, PyUntypedArray};
use pyo3::exceptions::{PyMemoryError, PyTypeError, PyValueError};
use pyo3::prelude::*;

/// A float64 input copied out of Python (row-major).
pub(crate) struct F64Arr {
    pub shape: Vec<usize>,
    pub data: Vec<f64>,
}

impl F64Arr {
    pub fn ndim(&self) -> usize {
        self.shape.len()
    }
}

pub(crate) fn read(obj: &Bound<'_, PyAny>, name: &str) -> PyResult<F64Arr> {
    let py = obj.py();
    let owned;
    let arr = if let Ok(a) = obj.cast::<PyUntypedArray>() {
        let d = a.dtype();
        if d.is_equiv_to(&dtype::<f64>(py)) {
            a.clone()
        } else if d.kind() == b'f' && (d.itemsize() == 4 || d.itemsize() == 8) {
            // float32 (either byte order) or non-native-order float64: exact, every float32 is a float64
            owned = a.call_method1("astype", (py.import("numpy")?.getattr("float64")?,))?;
            owned.cast_into::<PyUntypedArray>().map_err(|_| PyTypeError::new_err(format!("{name}: not an array")))?
        } else {
            return Err(PyTypeError::new_err(format!(
                "{name}: expected a float64 (or float32, up-cast) array, got dtype {} (use {name}.astype(numpy.float64))",
                a.dtype()
            )));
        }
    } else {
        let np = py.import("numpy")?;
        owned = np.call_method1("asarray", (obj, np.getattr("float64")?)).map_err(|e| {
            PyTypeError::new_err(format!("{name}: expected a float64 array or a sequence of numbers ({e})"))
        })?;
        owned.cast_into::<PyUntypedArray>().map_err(|_| PyTypeError::new_err(format!("{name}: not an array")))?
    };
    let a = arr.cast::<PyArrayDyn<f64>>().map_err(|_| PyTypeError::new_err(format!("{name}: not a float64 array")))?;
    let shape = a.shape().to_vec();
    // Copied out at once while holding the GIL, so no Python code can write the array meanwhile; this skips
    // rust-numpy's borrow tracking (a global lock and hash map per call) on the per-step path.
    let data = match unsafe { a.as_slice() } {
        Ok(s) => s.to_vec(),
        Err(_) => a
            .try_readonly()
            .map_err(|e| PyValueError::new_err(format!("{name}: {e}")))?
            .as_array()
            .iter()
            .copied()
            .collect(),
    };
    if let Some(k) = data.iter().position(|v| !v.is_finite()) {
        return Err(PyValueError::new_err(format!(
            "{name}: entry {} is {}; inputs must be finite",
            index_str(&shape, k),
            data[k]
        )));
    }
    Ok(F64Arr { shape, data })
}

/// The multi-index of flat entry `k` of an array of `shape`, as "[i, j]".
fn index_str(shape: &[usize], mut k: usize) -> String {
    let mut idx = vec![0; shape.len()];
    for (i, &n) in shape.iter().enumerate().rev() {
        if n > 0 {
            idx[i] = k % n;
            k /= n;
        }
    }
    format!("{idx:?}")
}

/// Memory available now (Linux `MemAvailable`, bytes); None elsewhere.
fn available_bytes() -> Option<u128> {
    let s = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = s.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kb: u128 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// Entries of a result of shape `dims`, checked: MemoryError if the count overflows, or the f64 buffer would
/// take more than half the memory available now (Linux `MemAvailable`; a result that size leaves no room to use
/// it, and the allocation would fail or push the machine into swap).
pub(crate) fn check_alloc(dims: &[usize], what: &str) -> PyResult<usize> {
    let shape = shape_str(dims);
    let too_big = || PyMemoryError::new_err(format!("{what}: a float64 array of shape {shape} does not fit in memory"));
    let n = dims.iter().try_fold(1usize, |a, &d| a.checked_mul(d)).ok_or_else(too_big)?;
    let bytes = n as u128 * 8;
    if bytes > isize::MAX as u128 {
        return Err(too_big());
    }
    if let Some(avail) = available_bytes() {
        if bytes > avail / 2 {
            return Err(PyMemoryError::new_err(format!(
                "{what}: a float64 array of shape {shape} needs {:.1} GB, more than half the {:.1} GB of memory \
                 available",
                bytes as f64 / 1e9,
                avail as f64 / 1e9
            )));
        }
    }
    Ok(n)
}

/// A zeroed buffer for a result of shape `dims` ([`check_alloc`], then a fallible allocation).
pub(crate) fn alloc(dims: &[usize], what: &str) -> PyResult<Vec<f64>> {
    let n = check_alloc(dims, what)?;
    let mut v: Vec<f64> = Vec::new();
    v.try_reserve_exact(n).map_err(|e| PyMemoryError::new_err(format!("{what}: shape {}: {e}", shape_str(dims))))?;
    v.resize(n, 0.0);
    Ok(v)
}

fn shape_str(s: &[usize]) -> String {
    match s {
        [n] => format!("({n},)"),
        _ => format!("({})", s.iter().map(|v| v.to_string()).collect::<Vec<_>>().join(", ")),
    }
}

/// A vector of exactly `n` entries (shape (n,)).
pub(crate) fn vec1(obj: &Bound<'_, PyAny>, name: &str, n: usize) -> PyResult<Vec<f64>> {
    let a = read(obj, name)?;
    if a.shape != [n] {
        return Err(PyValueError::new_err(format!("{name}: expected shape ({n},), got {}", shape_str(&a.shape))));
    }
    Ok(a.data)
}

/// A matrix with `cols` columns and, if given, `rows` rows; returns (rows, data).
pub(crate) fn mat2(
    obj: &Bound<'_, PyAny>,
    name: &str,
    rows: Option<usize>,
    cols: usize,
) -> PyResult<(usize, Vec<f64>)> {
    let a = read(obj, name)?;
    let ok = a.ndim() == 2 && a.shape[1] == cols && rows.is_none_or(|r| a.shape[0] == r);
    if !ok {
        let want = match rows {
            Some(r) => format!("({r}, {cols})"),
            None => format!("(T, {cols})"),
        };
        return Err(PyValueError::new_err(format!("{name}: expected shape {want}, got {}", shape_str(&a.shape))));
    }
    Ok((a.shape[0], a.data))
}

/// An array of shape `(B, *inner)` or `inner` (broadcast over the batch); returns (Some(B) if batched, data).
pub(crate) fn batched(
    obj: &Bound<'_, PyAny>,
    name: &str,
    inner: &[Option<usize>],
) -> PyResult<(Option<usize>, F64Arr)> {
    let a = read(obj, name)?;
    let fits = |s: &[usize]| s.len() == inner.len() && s.iter().zip(inner).all(|(g, w)| w.is_none_or(|w| *g == w));
    if fits(&a.shape) {
        return Ok((None, a));
    }
    if !a.shape.is_empty() && fits(&a.shape[1..]) {
        return Ok((Some(a.shape[0]), a));
    }
    let want: Vec<String> = inner.iter().map(|w| w.map_or("T".to_string(), |v| v.to_string())).collect();
    Err(PyValueError::new_err(format!(
        "{name}: expected shape ({}) or (B, {}), got {}",
        want.join(", "),
        want.join(", "),
        shape_str(&a.shape)
    )))
}

/// A new float64 array of the given shape (data row-major, length checked by the caller).
pub(crate) fn out<'py>(py: Python<'py>, shape: &[usize], data: Vec<f64>) -> PyResult<Bound<'py, PyArrayDyn<f64>>> {
    let a = ArrayD::from_shape_vec(IxDyn(shape), data).map_err(|e| PyValueError::new_err(e.to_string()))?;
    Ok(PyArrayDyn::from_owned_array(py, a))
}

pub(crate) fn out_mat<'py>(py: Python<'py>, m: &nalgebra::DMatrix<f64>) -> PyResult<Bound<'py, PyArrayDyn<f64>>> {
    let (r, c) = m.shape();
    let data: Vec<f64> = (0..r).flat_map(|i| (0..c).map(move |j| m[(i, j)])).collect();
    out(py, &[r, c], data)
}

/// Stack matrices of equal shape into (len, rows, cols).
pub(crate) fn out_mats<'py>(
    py: Python<'py>,
    ms: &[&nalgebra::DMatrix<f64>],
    r: usize,
    c: usize,
) -> PyResult<Bound<'py, PyArrayDyn<f64>>> {
    let mut data = Vec::with_capacity(ms.len() * r * c);
    for m in ms {
        for i in 0..r {
            for j in 0..c {
                data.push(m[(i, j)]);
            }
        }
    }
    out(py, &[ms.len(), r, c], data)
}
