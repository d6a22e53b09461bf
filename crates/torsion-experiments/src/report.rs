//! The per-experiment HTML report (issue 18 item 2): one self-contained NAME.html (no network reference; the
//! plot inlined as a base64 data URI) with the metrics beside the paper's values, the targets marked PASS/FAIL,
//! the settings as pretty JSON and, for an experiment with a scene ([`crate::scene`]), the trajectory viewer
//! (`torsion_view::section`, its scripts inlined; the only script on the page).
use crate::result::{num, short, ExperimentError, ExperimentResult};
use base64::Engine;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// `text` safe inside HTML element content and attribute values.
pub fn escape_html(text: &str) -> String {
    let mut s = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => s.push_str("&amp;"),
            '<' => s.push_str("&lt;"),
            '>' => s.push_str("&gt;"),
            '"' => s.push_str("&quot;"),
            '\'' => s.push_str("&#39;"),
            _ => s.push(c),
        }
    }
    s
}

const STYLE: &str = "body{font-family:sans-serif;max-width:60em;margin:2em auto;padding:0 1em}\
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:.25em .6em;text-align:left}\
td.n{font-family:monospace}.pass{background:#c8f0c8;color:#064}.fail{background:#f6c8c8;color:#800}\
img{max-width:100%}pre{background:#f4f4f4;padding:1em;overflow:auto}";
/// The embedded viewer's height (after `torsion_view::STYLE`, which leaves it to the page).
const VIEWER_STYLE: &str = "#torsion-viewer{height:640px;border:1px solid #ccc}";

impl ExperimentResult {
    /// The report page for this result, `png` the plot's bytes (none: no image).
    pub fn html(&self, png: Option<&[u8]>) -> Result<String, ExperimentError> {
        let e = escape_html;
        let name = e(&self.name);
        let viewer = self.scene.as_ref().map(|s| s.section()).transpose()?;
        let viewer_style =
            if viewer.is_some() { format!("{}{VIEWER_STYLE}", torsion_view::STYLE) } else { String::new() };
        let mut h = format!(
            "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>torsion experiment {name}</title>\
             <style>{STYLE}{viewer_style}</style></head><body>\n<h1>{name}</h1>\n"
        );
        if !self.checks.is_empty() {
            let met = self.checks.iter().filter(|c| c.pass).count();
            h += &format!("<p>{met} of {} targets met</p>\n", self.checks.len());
        }
        if let Some(png) = png {
            let b64 = base64::engine::general_purpose::STANDARD.encode(png);
            h += &format!("<img alt=\"{name} plot\" src=\"data:image/png;base64,{b64}\">\n");
        }
        if let (Some(v), Some(s)) = (viewer, &self.scene) {
            let runs: Vec<String> = s.trajectories.iter().map(|t| e(&t.name)).collect();
            h += &format!(
                "<h2>Scene</h2>\n<p>{}: {} (drag to orbit, slider or space to play)</p>\n{v}\n",
                e(&s.model.name),
                runs.join(", ")
            );
        }
        // metrics beside the paper's value under the same key (as `summary()`)
        let rows = self.metric_rows();
        h += "<h2>Metrics</h2>\n<table><tr><th>metric</th><th>ours</th><th>paper</th></tr>\n";
        for (k, v) in &rows {
            let paper = self.paper.get(k).and_then(short).unwrap_or_default();
            h +=
                &format!("<tr><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td></tr>\n", e(k), e(v), e(&paper));
        }
        h += "</table>\n";
        // the paper's other entries (claim, target, …)
        if let Value::Object(p) = &self.paper {
            let other: Vec<_> = p.iter().filter(|(k, _)| !rows.iter().any(|(r, _)| r == *k)).collect();
            if !other.is_empty() {
                h += "<h2>Paper</h2>\n<ul>\n";
                for (k, v) in other {
                    let text = v.as_str().map(str::to_string).or_else(|| short(v)).unwrap_or_else(|| v.to_string());
                    h += &format!("<li><b>{}</b>: {}</li>\n", e(k), e(&text));
                }
                h += "</ul>\n";
            }
        }
        if !self.checks.is_empty() {
            h += "<h2>Targets</h2>\n<table><tr><th>target</th><th>ours</th><th>result</th></tr>\n";
            for c in &self.checks {
                let (class, verdict) = if c.pass { ("pass", "PASS") } else { ("fail", "FAIL") };
                h += &format!(
                    "<tr><td>{}</td><td class=\"n\">{}</td><td class=\"{class}\">{verdict}</td></tr>\n",
                    e(&c.target),
                    e(&num(c.value))
                );
            }
            h += "</table>\n";
        }
        let settings = serde_json::to_string_pretty(&self.settings).unwrap_or_else(|_| self.settings.to_string());
        h += &format!("<details><summary>Settings</summary>\n<pre>{}</pre></details>\n</body></html>\n", e(&settings));
        Ok(h)
    }

    /// Writes `out/NAME.html` (after [`ExperimentResult::write`], whose `out/NAME.png` it inlines; drawn here if
    /// absent) and returns its path.
    pub fn write_html(&self, out: &Path) -> Result<PathBuf, ExperimentError> {
        std::fs::create_dir_all(out).map_err(|source| ExperimentError::Io { path: out.into(), source })?;
        let png_path = out.join(format!("{}.png", self.name));
        if !png_path.exists() {
            (self.plot)(&png_path)?;
        }
        let png = std::fs::read(&png_path).map_err(|source| ExperimentError::Io { path: png_path, source })?;
        let path = out.join(format!("{}.html", self.name));
        std::fs::write(&path, self.html(Some(&png))?)
            .map_err(|source| ExperimentError::Io { path: path.clone(), source })?;
        Ok(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::Check;
    use serde_json::json;

    fn result(name: &str, metrics: Value) -> ExperimentResult {
        ExperimentResult {
            scene: None,
            name: name.into(),
            metrics,
            paper: json!({"err": 0.5, "claim": "a < b & c"}),
            settings: json!({"steps": 10, "note": "<b>"}),
            checks: vec![Check::le("err", 0.25, 0.5), Check::ge("rate <x>", 0.1, 0.9)],
            plot: Box::new(|p: &Path| {
                std::fs::write(p, [0x89, b'P', b'N', b'G']).map_err(|e| ExperimentError::Plot(e.to_string()))
            }),
        }
    }

    #[test]
    fn html_escapes_every_text() {
        let r = result("x<script>alert(1)</script>", json!({"<script>evil()</script>": 1.0, "err": 0.25}));
        let h = r.html(None).unwrap();
        assert!(!h.contains("<script"), "{h}");
        assert!(h.contains("&lt;script&gt;evil()&lt;/script&gt;"), "metric name escaped: {h}");
        assert!(h.contains("x&lt;script&gt;alert(1)&lt;/script&gt;"), "title escaped");
        assert!(h.contains("a &lt; b &amp; c") && h.contains("rate &lt;x&gt;") && h.contains("&quot;&lt;b&gt;&quot;"));
    }

    #[test]
    fn html_embeds_the_scene_viewer_with_its_runs() {
        let g = torsion_math::Vec3::new(0.0, 0.0, -9.81);
        let model = torsion_model::builder::two_link_arm(1.0, 1.0, 1.0, g, 0.01).unwrap();
        let run = |name: &str, a: f64| {
            let mut rec = crate::scene::Recorder::new(name, &model).unwrap();
            for k in 0..3 {
                let q = vec![a * k as f64; model.nq()];
                rec.gen(0.1 * k as f64, &torsion_model::GenState::new(q, vec![0.0; model.nv()]), &[]).unwrap();
            }
            rec.finish()
        };
        let trajectories = vec![run("truth", 0.1), run("fit <1>", 0.2)];
        assert_eq!(trajectories[1].body_poses.len(), 3);
        let scene = crate::scene::SceneView::new(model.clone(), trajectories).unwrap();
        let r = result("demo", json!({"err": 0.25})).with_scene(scene);
        let h = r.html(None).unwrap();
        assert!(h.contains("<h2>Scene</h2>") && h.contains("truth, fit &lt;1&gt;"), "legend in the text");
        assert!(
            h.contains("<div id=\"torsion-viewer\">") && h.contains(torsion_view::STYLE) && h.contains("torsionViewer")
        );
        // one viewer, its data parsed back: both runs with their poses
        assert_eq!(h.matches("id=\"torsion-data\"").count(), 1);
        let start = h.find("id=\"torsion-data\">").unwrap() + "id=\"torsion-data\">".len();
        let data: Value = serde_json::from_str(&h[start..start + h[start..].find("</script>").unwrap()]).unwrap();
        assert_eq!(data["trajectories"][1]["name"], "fit <1>");
        assert_eq!(data["scene"]["shapes"].as_array().unwrap().len(), model.shapes.len());
        // nothing fetched (three.js names URLs in strings, e.g. XML namespaces, but loads none)
        for net in ["src=\"http", "href=\"http", "from\"http", "import(\"http"] {
            assert!(!h.contains(net), "the page fetches {net}");
        }
    }

    #[test]
    fn html_has_plot_metrics_paper_targets_and_settings() {
        let r = result("demo", json!({"err": 0.25, "nested": {"a": 2.0, "long": [1, 2, 3, 4, 5, 6, 7]}, "flag": true}));
        let dir = std::env::temp_dir().join(format!("torsion-report-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let path = r.write_html(&dir).unwrap();
        assert_eq!(path, dir.join("demo.html"));
        let h = std::fs::read_to_string(&path).unwrap();
        // the plot drawn by the closure, inlined: base64 of [0x89, 'P', 'N', 'G']
        assert!(h.contains("data:image/png;base64,iVBORw==\""), "{h}");
        // the metric beside the paper's value; nested one level; arrays over 6 numbers left out
        assert!(h.contains("<td>err</td><td class=\"n\">0.250000</td><td class=\"n\">0.500000</td>"), "{h}");
        assert!(h.contains("<td>nested.a</td>") && !h.contains("nested.long") && h.contains("<td>flag</td>"));
        assert!(h.contains("<b>claim</b>"));
        assert!(h.contains("<td class=\"pass\">PASS</td>") && h.contains("<td class=\"fail\">FAIL</td>"));
        assert!(h.contains("1 of 2 targets met"));
        assert!(h.contains("<details><summary>Settings</summary>") && h.contains("&quot;steps&quot;: 10"));
        assert!(!h.contains("http://") && !h.contains("https://"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
