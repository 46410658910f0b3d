//! Prometheus text rendering: structure, escaping, stable names, and Prometheus'
//! own parser and linter (`promtool check metrics`, which parses with the same
//! prometheus/common expfmt text parser node_exporter's textfile collector uses).

use crate::doctor_support;

use doctor_support::load;
use roce_net::HostState;
use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::process::{Command, Stdio};

fn sample() -> HostState {
    let mut st = load("rdma-retransmits.bad.json");
    // Characters the format escapes, in a label value.
    st.hostname = "gpu\"1\\a\nb".into();
    st
}

fn render(st: &HostState) -> String {
    roce_net::render_metrics(st, &roce_net::doctor(st))
}

#[test]
fn every_family_has_help_and_type_first_and_no_label_set_repeats() {
    let text = render(&sample());
    let mut typed: BTreeMap<String, String> = BTreeMap::new();
    let mut helped = BTreeSet::new();
    let mut seen = BTreeSet::new();
    let mut current = String::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# HELP ") {
            let name = rest.split(' ').next().unwrap().to_string();
            assert!(helped.insert(name.clone()), "two HELP lines for {name}");
            current = name;
            continue;
        }
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let mut w = rest.split(' ');
            let name = w.next().unwrap().to_string();
            assert_eq!(name, current, "TYPE right after its HELP");
            typed.insert(name, w.next().unwrap().to_string());
            continue;
        }
        let name = line.split(['{', ' ']).next().unwrap();
        assert_eq!(name, current, "sample {line} outside its family");
        let series = line.rsplit_once(' ').unwrap().0;
        assert!(seen.insert(series.to_string()), "repeated series {series}");
        let value = line.rsplit_once(' ').unwrap().1;
        assert!(value.parse::<u64>().is_ok(), "{line}");
    }
    for (name, kind) in &typed {
        assert!(name.starts_with("roce_net_"), "{name}");
        assert!(helped.contains(name), "{name} has no HELP");
        assert_eq!(
            kind == "counter",
            name.ends_with("_total"),
            "{name} is a {kind}"
        );
    }
    assert!(text.contains(r#"hostname="gpu\"1\\a\nb""#), "{text}");
}

#[test]
fn findings_ports_and_counters_are_all_there() {
    let st = sample();
    let findings = roce_net::doctor(&st);
    let text = render(&st);
    let retrans = findings
        .iter()
        .filter(|f| f.id == "rdma-retransmits")
        .count();
    assert!(retrans > 0);
    assert!(
        text.contains(&format!(
            "roce_net_check_findings{{check=\"rdma-retransmits\"}} {retrans}\n"
        )),
        "{text}"
    );
    for id in roce_net::CHECK_IDS {
        assert!(
            text.contains(&format!("roce_net_check_findings{{check=\"{id}\"}} ")),
            "{id}"
        );
    }
    let errors = findings
        .iter()
        .filter(|f| f.severity == roce_net::Severity::Error)
        .count();
    assert!(text.contains(&format!(
        "roce_net_findings{{severity=\"error\"}} {errors}\n"
    )));
    let port = &st.rdma[0].ports[0];
    let dev = &st.rdma[0].name;
    for (name, v) in &port.hw_counters {
        if name == "lifespan" {
            assert!(!text.contains("counter=\"lifespan\""));
            continue;
        }
        let series = format!(
            "roce_net_rdma_port_stats_total{{device=\"{dev}\",port=\"{}\",netdev=\"{}\",counter=\"{name}\",source=\"hw_counters\"}} {v}\n",
            port.port,
            port.netdev.as_deref().unwrap_or("")
        );
        assert!(text.contains(&series), "{series} missing");
        if roce_net::RETRANSMIT_COUNTERS.contains(&name.as_str()) {
            assert!(text.contains(&format!(
                "roce_net_rdma_retransmits_total{{device=\"{dev}\",port=\"{}\",netdev=\"{}\",counter=\"{name}\"}} {v}\n",
                port.port,
                port.netdev.as_deref().unwrap_or("")
            )));
        }
    }
    assert!(text.contains("# TYPE roce_net_rdma_port_active gauge"));
    assert!(text.contains("# TYPE roce_net_nic_dropped_packets_total counter"));
}

fn promtool(text: &str) -> (bool, String) {
    let mut child = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("promtool (Debian package prometheus; scripts/test.sh installs it)");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let msg =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    (out.status.success(), msg)
}

#[test]
#[ignore = "needs promtool (apt install prometheus; scripts/test.sh installs it)"]
fn promtool_parses_and_lints_every_fixture_clean() {
    for e in std::fs::read_dir(doctor_support::fixture_dir()).unwrap() {
        let p = e.unwrap().path();
        let mut st = HostState::load(&p).unwrap();
        st.hostname = "gpu\"1\\a\nb".into();
        let (ok, msg) = promtool(&render(&st));
        assert!(ok && msg.trim().is_empty(), "{}: {msg}", p.display());
    }
    // The judge judges: a counter without _total, and a broken line, fail.
    // (promtool 2.42 accepts a repeated series; the structural test above
    // rejects it, as node_exporter's registry would.)
    let (ok, _) = promtool("# HELP x_total a\n# TYPE x_total counter\nx_total{a=\"1} 1\n");
    assert!(!ok);
    let (ok, msg) = promtool("# HELP x a\n# TYPE x counter\nx 1\n");
    assert!(!ok && msg.contains("_total"), "{msg}");
}

/// An interface whose kernel name holds a backslash (`a\b`, which the model
/// keeps as `a\\b`) is labelled with the kernel's name, escaped once as the
/// text format asks (`interface="a\\b"`), exactly as node_exporter labels the
/// same interface (`device="a\\b"`), so the two join. It used to be escaped
/// twice (`interface="a\\\\b"`, read back as `a\\b`).
#[test]
fn a_backslash_in_an_interface_name_is_escaped_once() {
    let st = load("arp-ignore.bad.json");
    // Rename ens4 (in scope, behind mlx5_3, its arp_ignore wrong) to the kernel name `a\b` everywhere.
    let model_name = roce_net::ifname_from_kernel(b"a\\b");
    assert_eq!(model_name, "a\\\\b");
    let json = st
        .to_json()
        .replace("\"ens4\"", &serde_json::to_string(&model_name).unwrap());
    let st = HostState::from_json_slice(json.as_bytes()).unwrap();
    assert!(st.interface(&model_name).is_some());
    let text = render(&st);
    for line in [
        r#"roce_net_nic_up{interface="a\\b"} 1"#,
        r#"roce_net_rdma_port_active{device="mlx5_3",port="1",netdev="a\\b"} 1"#,
        r#"roce_net_finding{check="arp-ignore",severity="error",interface="a\\b"} 1"#,
    ] {
        assert!(text.contains(line), "{line} missing:\n{text}");
    }
    assert!(!text.contains(r"a\\\\b"), "escaped twice:\n{text}");
}
