//! The report's pieces read or drawn from elsewhere: the hot-SKU ceiling chart, criterion figures and binary sizes.

use super::*;

pub(crate) fn ceiling(shards: u32) -> f64 {
    let per_shard = 1000.0 / 2.0;
    let index = f64::from(holdfast::adapters::dynamo::INDEX_BUCKETS) * 1000.0 / 2.0;
    (per_shard * f64::from(shards)).min(index)
}

pub(crate) fn svg_chart() -> String {
    let (w, h, pad) = (640.0, 360.0, 50.0);
    let max_y = 35_000.0;
    let x = |s: f64| pad + (s - 1.0) / 63.0 * (w - 2.0 * pad);
    let y = |v: f64| h - pad - v / max_y * (h - 2.0 * pad);
    let mut pts = String::new();
    for s in 1..=64 {
        let _ = write!(pts, "{:.1},{:.1} ", x(f64::from(s)), y(ceiling(s)));
    }
    let need = (20_000.0 / 500.0_f64).ceil();
    let mut svg = format!(
        r##"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="12">
<rect width="100%" height="100%" fill="white"/>
<text x="{cx}" y="20" text-anchor="middle" font-size="14">Hot-SKU ceiling (model): sustainable freezes/s of one SKU vs shards</text>
<line x1="{pad}" y1="{b}" x2="{r}" y2="{b}" stroke="black"/><line x1="{pad}" y1="{pad}" x2="{pad}" y2="{b}" stroke="black"/>
<line x1="{pad}" y1="{t20}" x2="{r}" y2="{t20}" stroke="#c00" stroke-dasharray="6,4"/>
<text x="{r}" y="{t20l}" text-anchor="end" fill="#c00">20,000/s flash-sale peak</text>
<polyline fill="none" stroke="#06c" stroke-width="2" points="{pts}"/>
<line x1="{nx}" y1="{b}" x2="{nx}" y2="{t20}" stroke="#888" stroke-dasharray="3,3"/>
<text x="{nx}" y="{nyl}" text-anchor="middle" fill="#444">{need} shards</text>
<text x="{cx}" y="{xl}" text-anchor="middle">shards</text>
"##,
        cx = w / 2.0,
        b = h - pad,
        r = w - pad,
        t20 = y(20_000.0),
        t20l = y(20_000.0) - 6.0,
        nx = x(need),
        nyl = h - pad + 28.0,
        xl = h - 8.0
    );
    for s in [1, 8, 16, 32, 48, 64] {
        let _ =
            writeln!(svg, r#"<text x="{:.1}" y="{}" text-anchor="middle">{s}</text>"#, x(f64::from(s)), h - pad + 15.0);
    }
    for v in [0, 10_000, 20_000, 30_000] {
        let _ =
            writeln!(svg, r#"<text x="{}" y="{:.1}" text-anchor="end">{v}</text>"#, pad - 5.0, y(f64::from(v)) + 4.0);
    }
    svg.push_str("</svg>\n");
    svg
}

pub(crate) fn read_json(path: &Path) -> Option<Value> {
    std::fs::read_to_string(path).ok().and_then(|t| serde_json::from_str(&t).ok())
}

pub(crate) fn binary_sizes() -> BTreeMap<String, u64> {
    let dir = PathBuf::from(std::env::var("CARGO_TARGET_DIR").unwrap_or_else(|_| "target".into())).join("lambda");
    let mut out = BTreeMap::new();
    for (name, _) in holdfast::handlers::FUNCTIONS {
        if let Ok(m) = std::fs::metadata(dir.join(name).join("bootstrap")) {
            out.insert((*name).to_owned(), m.len());
        }
    }
    out
}
