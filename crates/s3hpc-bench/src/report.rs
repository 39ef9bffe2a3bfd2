//! `--report DIR`: SVG plots (plotters, SVG backend) and an `index.html` showing them with the
//! tables.

use std::fmt::Write as _;
use std::path::Path;

use plotters::prelude::*;

use crate::output::{fmt_size, fmt_us};
use crate::stats::BenchRun;

type Series = (String, Vec<(f64, f64)>);

/// Series colour `i`: the 8 of the common palette, then further hues (golden-angle steps, two
/// lightnesses) so that no two of a chart's series share a colour.
fn color(i: usize) -> RGBColor {
    const C: [RGBColor; 8] = [
        RGBColor(31, 119, 180),
        RGBColor(255, 127, 14),
        RGBColor(44, 160, 44),
        RGBColor(214, 39, 40),
        RGBColor(148, 103, 189),
        RGBColor(140, 86, 75),
        RGBColor(227, 119, 194),
        RGBColor(127, 127, 127),
    ];
    if i < C.len() {
        return C[i];
    }
    let k = i - C.len();
    let hue = (0.11 + k as f64 * 0.381_966) % 1.0;
    let light = if k.is_multiple_of(2) { 0.38 } else { 0.55 };
    let c = HSLColor(hue, 0.7, light).to_rgba();
    RGBColor(c.0, c.1, c.2)
}

/// A tick label for an axis of whole numbers (concurrency): the number at whole ticks, nothing
/// between them (rounding 1.5 and 2.5 printed `1 2 2 2 3`).
fn int_label(x: f64) -> String {
    if (x - x.round()).abs() < 1e-6 { format!("{x:.0}") } else { String::new() }
}

/// Object sizes are drawn on a log2 axis (x = log2(size)), labelled at whole powers of two: the
/// sizes a sweep measures (4KiB, 1MiB, ...), not a log10 axis's 9.8KiB, 97.7KiB, ...
fn size_label(x: f64) -> String {
    if (x - x.round()).abs() < 1e-6 && (0.0..64.0).contains(&x) {
        fmt_size(1u64 << (x.round() as u32))
    } else {
        String::new()
    }
}

/// A line chart; `log_x`/`log_y` choose logarithmic axes.
#[allow(clippy::too_many_arguments)]
fn line_chart(
    title: &str,
    x_desc: &str,
    y_desc: &str,
    series: &[Series],
    log_x: bool,
    log_y: bool,
    x_fmt: &dyn Fn(f64) -> String,
) -> anyhow::Result<String> {
    let mut buf = String::new();
    {
        let root = SVGBackend::with_string(&mut buf, (860, 480)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| anyhow::anyhow!("{e:?}"))?;
        let pts = series.iter().flat_map(|s| s.1.iter());
        let (mut x0, mut x1, mut y0, mut y1) = (f64::MAX, f64::MIN, f64::MAX, f64::MIN);
        for &(x, y) in pts {
            x0 = x0.min(x);
            x1 = x1.max(x);
            y0 = y0.min(y);
            y1 = y1.max(y);
        }
        if x0 > x1 {
            (x0, x1, y0, y1) = (1.0, 2.0, 1.0, 2.0);
        }
        let pad = |a: f64, b: f64, log: bool| -> (f64, f64) {
            if log {
                let a = a.max(1e-3);
                (a / 1.5, b.max(a) * 1.5)
            } else {
                let span = (b - a).abs().max(b.abs() * 0.1).max(1e-9);
                ((a - span * 0.05).min(0.0f64.max(a - span * 0.05)), b + span * 0.1)
            }
        };
        // A logarithmic axis over less than a decade has no labelled powers of ten and crams
        // its minor labels together: such an axis is drawn linear.
        let log_x = log_x && x1 / x0.max(1e-3) >= 10.0;
        let log_y = log_y && y1 / y0.max(1e-3) >= 10.0;
        // A linear axis gets about one label per unit for short ranges (concurrency, log2 size),
        // so whole values are tick positions.
        let x_labels = if log_x { 10 } else { ((x1 - x0).ceil() as usize + 1).clamp(2, 12) };
        let (x0, x1) = pad(x0, x1, log_x);
        let (y0, y1) = pad(y0.min(if log_y { y0 } else { 0.0 }), y1, log_y);
        let mut cb = ChartBuilder::on(&root);
        cb.caption(title, ("sans-serif", 20)).margin(12).x_label_area_size(40).y_label_area_size(70);
        macro_rules! draw {
            ($chart:expr) => {{
                let mut chart = $chart;
                chart
                    .configure_mesh()
                    .x_desc(x_desc)
                    .y_desc(y_desc)
                    .x_labels(x_labels)
                    .y_labels(8)
                    .x_label_formatter(&|x| x_fmt(*x))
                    .draw()
                    .map_err(|e| anyhow::anyhow!("{e:?}"))?;
                for (i, (name, pts)) in series.iter().enumerate() {
                    let c = color(i);
                    chart
                        .draw_series(LineSeries::new(pts.iter().copied(), c.stroke_width(2)))
                        .map_err(|e| anyhow::anyhow!("{e:?}"))?
                        .label(name.clone())
                        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], c.stroke_width(2)));
                    chart
                        .draw_series(pts.iter().map(|p| Circle::new(*p, 3, c.filled())))
                        .map_err(|e| anyhow::anyhow!("{e:?}"))?;
                }
                chart
                    .configure_series_labels()
                    .background_style(WHITE.mix(0.85))
                    .border_style(BLACK)
                    .position(SeriesLabelPosition::UpperLeft)
                    .draw()
                    .map_err(|e| anyhow::anyhow!("{e:?}"))?;
            }};
        }
        match (log_x, log_y) {
            (true, true) => draw!(cb.build_cartesian_2d((x0..x1).log_scale(), (y0..y1).log_scale())?),
            (true, false) => draw!(cb.build_cartesian_2d((x0..x1).log_scale(), y0..y1)?),
            (false, true) => draw!(cb.build_cartesian_2d(x0..x1, (y0..y1).log_scale())?),
            (false, false) => draw!(cb.build_cartesian_2d(x0..x1, y0..y1)?),
        }
        root.present().map_err(|e| anyhow::anyhow!("{e:?}"))?;
    }
    Ok(buf)
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// Write the SVG plots and `index.html` into `dir` (created). Returns the files written.
pub fn write_report(run: &BenchRun, dir: &Path) -> anyhow::Result<Vec<String>> {
    std::fs::create_dir_all(dir)?;
    let mut charts: Vec<(String, String)> = Vec::new(); // (file, title)
    let mut save = |file: String, title: String, svg: String| -> anyhow::Result<()> {
        std::fs::write(dir.join(&file), svg)?;
        charts.push((file, title));
        Ok(())
    };

    // Throughput vs object size (sweep-like phases: the same op at several sizes).
    let mut tput: Vec<Series> = Vec::new();
    let mut ops_s: Vec<Series> = Vec::new();
    for r in &run.results {
        for op in ["put", "get", "head"] {
            let pts: Vec<(f64, f64)> = r
                .phases
                .iter()
                .filter(|p| p.name == op && p.object_size > 0)
                .map(|p| ((p.object_size as f64).log2(), p.mib_per_sec.max(1e-3)))
                .collect();
            if pts.len() >= 2 {
                if op != "head" {
                    tput.push((format!("{} {op}", r.target), pts.clone()));
                }
                let o: Vec<(f64, f64)> = r
                    .phases
                    .iter()
                    .filter(|p| p.name == op && p.object_size > 0)
                    .map(|p| ((p.object_size as f64).log2(), p.ops_per_sec.max(1e-3)))
                    .collect();
                ops_s.push((format!("{} {op}", r.target), o));
            }
        }
    }
    if !tput.is_empty() {
        let svg = line_chart("Throughput vs object size", "object size", "MiB/s", &tput, false, true, &size_label)?;
        save("throughput.svg".into(), "Throughput vs object size".into(), svg)?;
        let svg = line_chart("Operations/s vs object size", "object size", "ops/s", &ops_s, false, true, &size_label)?;
        save("ops.svg".into(), "Operations per second vs object size".into(), svg)?;
    }

    // Speedtest rounds and rate steps: figures against concurrency.
    let mut st: Vec<Series> = Vec::new();
    let mut rate: Vec<Series> = Vec::new();
    for r in &run.results {
        for op in ["put", "get"] {
            let pts: Vec<(f64, f64)> = r
                .phases
                .iter()
                .filter(|p| p.name.starts_with("round") && p.name.ends_with(&format!("-{op}")))
                .map(|p| (p.concurrency as f64, p.mib_per_sec))
                .collect();
            if !pts.is_empty() {
                st.push((format!("{} {op}", r.target), pts));
            }
        }
        let pts: Vec<(f64, f64)> = r
            .phases
            .iter()
            .filter(|p| p.name.starts_with('c') && p.name[1..].parse::<usize>().is_ok())
            .map(|p| (p.concurrency as f64, p.ops_per_sec.max(1e-3)))
            .collect();
        if !pts.is_empty() {
            rate.push((r.target.clone(), pts));
        }
    }
    if !st.is_empty() {
        let svg = line_chart("Speedtest rounds", "concurrency", "MiB/s", &st, false, false, &int_label)?;
        save("speedtest.svg".into(), "Speedtest: throughput per round".into(), svg)?;
    }
    if !rate.is_empty() {
        let svg = line_chart("Request rate", "concurrency", "ops/s", &rate, true, true, &int_label)?;
        save("rate.svg".into(), "Request rate vs concurrency".into(), svg)?;
    }

    // Latency distribution per phase (and op), one line per target.
    let mut keys: Vec<(String, u64)> = Vec::new();
    for r in &run.results {
        for p in r.phases.iter().filter(|p| p.latency.is_some() && p.ops > 1) {
            let k = (p.name.clone(), p.object_size);
            if !keys.contains(&k) {
                keys.push(k);
            }
        }
    }
    const QS: [&str; 7] = ["min", "p25", "p50", "p90", "p99", "p99.9", "max"];
    let q_fmt = |x: f64| QS.get(x.round() as usize).map(|s| s.to_string()).unwrap_or_default();
    for (i, (name, size)) in keys.iter().take(40).enumerate() {
        let mut series = Vec::new();
        for r in &run.results {
            if let Some(l) =
                r.phases.iter().find(|p| &p.name == name && p.object_size == *size).and_then(|p| p.latency.as_ref())
            {
                let v = [l.min_us, l.q1_us, l.p50_us, l.p90_us, l.p99_us, l.p999_us, l.max_us];
                series.push((r.target.clone(), v.iter().enumerate().map(|(i, v)| (i as f64, v.max(0.01))).collect()));
            }
        }
        let title = if *size > 0 { format!("Latency: {name} {}", fmt_size(*size)) } else { format!("Latency: {name}") };
        let svg = line_chart(&title, "percentile", "latency (us)", &series, false, true, &q_fmt)?;
        save(format!("latency-{i:02}.svg"), title, svg)?;
    }

    // index.html
    let mut h = String::new();
    let _ = writeln!(
        h,
        "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>s3hpc bench: {}</title><style>body{{font-family:sans-serif;margin:2em}}table{{border-collapse:collapse;font-size:13px}}td,th{{border:1px solid #ccc;padding:2px 6px;text-align:right}}td.l,th.l{{text-align:left}}img{{max-width:100%;border:1px solid #eee;margin:4px}}</style></head><body>",
        esc(&run.workload)
    );
    let _ = writeln!(h, "<h1>s3hpc bench {}</h1><p><code>{}</code></p>", esc(&run.workload), esc(&run.command));
    let _ = writeln!(
        h,
        "<table><tr><th class=l>phase</th><th>size</th><th class=l>target</th><th>conc</th><th>ops</th><th>errors</th><th>seconds</th><th>ops/s</th><th>MiB/s</th><th>p50</th><th>p90</th><th>p99</th><th>p99.9</th><th>max</th><th>ttfb p50</th></tr>"
    );
    let mut order: Vec<(String, u64)> = Vec::new();
    for r in &run.results {
        for p in &r.phases {
            let k = (p.name.clone(), p.object_size);
            if !order.contains(&k) {
                order.push(k);
            }
        }
    }
    for (name, size) in &order {
        for r in &run.results {
            for p in r.phases.iter().filter(|p| &p.name == name && p.object_size == *size) {
                let l = |f: fn(&crate::stats::Lat) -> f64| p.latency.as_ref().map(|l| fmt_us(f(l))).unwrap_or_default();
                let _ = writeln!(
                    h,
                    "<tr><td class=l>{}</td><td>{}</td><td class=l>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.3}</td><td>{:.1}</td><td>{:.1}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                    esc(&p.name),
                    if p.object_size > 0 { fmt_size(p.object_size) } else { "-".into() },
                    esc(&r.target),
                    p.concurrency,
                    p.ops,
                    p.errors,
                    p.seconds,
                    p.ops_per_sec,
                    p.mib_per_sec,
                    l(|l| l.p50_us),
                    l(|l| l.p90_us),
                    l(|l| l.p99_us),
                    l(|l| l.p999_us),
                    l(|l| l.max_us),
                    p.ttfb.as_ref().map(|t| fmt_us(t.p50_us)).unwrap_or_default(),
                );
            }
        }
    }
    let _ = writeln!(h, "</table>");
    for r in &run.results {
        let _ = writeln!(h, "<h3>{} [{}]: {} errors</h3>", esc(&r.target), esc(&r.workload), r.errors);
        if !r.summary.is_empty() {
            let _ = writeln!(h, "<table>");
            for (k, v) in &r.summary {
                let _ = writeln!(h, "<tr><td class=l>{}</td><td>{v:.4}</td></tr>", esc(k));
            }
            let _ = writeln!(h, "</table>");
        }
        for e in &r.error_samples {
            let _ = writeln!(h, "<p>error: {}</p>", esc(e));
        }
        if let Some(a) = &r.aborted {
            let _ = writeln!(h, "<p><b>aborted:</b> {}</p>", esc(a));
        }
    }
    for (file, title) in &charts {
        let _ = writeln!(h, "<h2>{}</h2><img src=\"{}\" alt=\"{}\">", esc(title), esc(file), esc(title));
    }
    let _ = writeln!(h, "</body></html>");
    std::fs::write(dir.join("index.html"), h)?;
    let mut files: Vec<String> = charts.into_iter().map(|c| c.0).collect();
    files.push("index.html".into());
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The text of every `<text>` element of an SVG.
    fn texts(svg: &str) -> Vec<String> {
        svg.split("<text")
            .skip(1)
            .filter_map(|t| Some(t.split_once('>')?.1.split_once("</text>")?.0.trim().to_string()))
            .collect()
    }

    #[test]
    fn concurrency_axis_labels_whole_numbers_once() {
        let s: Vec<Series> = vec![("t put".into(), vec![(1.0, 10.0), (2.0, 20.0), (3.0, 25.0)])];
        let svg = line_chart("Speedtest rounds", "concurrency", "MiB/s", &s, false, false, &int_label).unwrap();
        let t = texts(&svg);
        for n in ["1", "2", "3"] {
            assert_eq!(t.iter().filter(|x| x.as_str() == n).count(), 1, "label {n} once: {t:?}");
        }
    }

    #[test]
    fn size_axis_shows_the_measured_sizes() {
        let pts = [4096u64, 65536, 1 << 20, 16 << 20].map(|b| ((b as f64).log2(), b as f64 / 1000.0)).to_vec();
        let s: Vec<Series> = vec![("t put".into(), pts)];
        let svg = line_chart("Throughput", "object size", "MiB/s", &s, false, true, &size_label).unwrap();
        let t = texts(&svg);
        for want in ["4KiB", "64KiB", "1MiB", "16MiB"] {
            assert!(t.iter().any(|x| x == want), "{want} in {t:?}");
        }
        assert!(!t.iter().any(|x| x.ends_with("iB") && x.contains('.')), "no fractional sizes: {t:?}");
    }

    #[test]
    fn latency_axis_under_a_decade_has_few_distinct_labels() {
        let s: Vec<Series> = vec![("t".into(), (0..7).map(|i| (i as f64, 1500.0 + 60.0 * i as f64)).collect())];
        let svg = line_chart("Latency", "percentile", "latency (us)", &s, false, true, &|_| String::new()).unwrap();
        let y: Vec<String> = texts(&svg).into_iter().filter(|x| x.parse::<f64>().is_ok()).collect();
        let mut uniq = y.clone();
        uniq.sort();
        uniq.dedup();
        assert_eq!(uniq.len(), y.len(), "repeated y labels: {y:?}");
        assert!((3..=10).contains(&y.len()), "y labels: {y:?}");
    }

    #[test]
    fn series_colours_do_not_repeat() {
        let c: Vec<(u8, u8, u8)> = (0..24).map(|i| (color(i).0, color(i).1, color(i).2)).collect();
        let mut u = c.clone();
        u.sort();
        u.dedup();
        assert_eq!(u.len(), c.len(), "{c:?}");
    }
}
