//! `logs -f` and `timeline -f` against a running scripted worker: each line shows while the
//! worker is still at work, and both exit 0 once its attempt has ended, having printed
//! everything (the same as the command without `-f` prints afterwards).

use std::io::Read;
use std::process::{Child, Stdio};
use std::sync::{Arc, Mutex};

use crate::common::{wait_for, Project};

/// A command whose stdout is read as it comes.
struct Followed {
    child: Child,
    out: Arc<Mutex<String>>,
}

impl Followed {
    fn start(p: &Project, args: &[&str]) -> Followed {
        let mut child = p.cmd().args(args).stdout(Stdio::piped()).stderr(Stdio::null()).spawn().expect("spawn");
        let mut stdout = child.stdout.take().expect("stdout");
        let out = Arc::new(Mutex::new(String::new()));
        let sink = out.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = stdout.read(&mut buf) {
                if n == 0 {
                    break;
                }
                sink.lock().expect("lock").push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        });
        Followed { child, out }
    }

    fn text(&self) -> String {
        self.out.lock().expect("lock").clone()
    }

    fn running(&mut self) -> bool {
        self.child.try_wait().expect("try_wait").is_none()
    }

    /// Wait for its exit (deadline 60 s) and its code.
    fn exit_code(&mut self) -> i32 {
        let mut code = None;
        wait_for("the follower to exit", || {
            code = self.child.try_wait().expect("try_wait").map(|s| s.code().unwrap_or(-1));
            code.is_some()
        });
        code.unwrap_or(-1)
    }
}

impl Drop for Followed {
    fn drop(&mut self) {
        // Our own child, by its pid: never outlives a failed test.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn logs_and_timeline_follow_a_running_worker_until_its_attempt_ends() {
    let p = Project::new(&[]);
    // Each step prints a line and reports progress, then waits for the test's go (a file in
    // its private TMPDIR): nothing of the next step can be written before the test says so.
    p.script_worker(
        "paced",
        "sparse",
        r#"for i in 1 2 3; do
  echo "line $i"
  "$GUILD_HALL_BIN" toolbox report-progress "step $i"
  while [ ! -e "$TMPDIR/go-$i" ]; do sleep 0.05; done
done
echo "the end"
"$GUILD_HALL_BIN" toolbox submit-result --summary "three steps""#,
    );
    let id = p.create("paced", "Paced", "Take three steps.");
    let mut reconciler = p.cmd().args(["reconcile", "--once", "--wait", "--timeout", "120s"]).stdout(Stdio::null()).spawn().expect("spawn");
    wait_for("the first attempt to start", || p.run_info(&id).is_some());
    let mut logs = Followed::start(&p, &["logs", "-f", &id]);
    let mut timeline = Followed::start(&p, &["timeline", "-f", "--json", &id]);
    let tmp = p.state_dir(&id).join("tmp");
    // A reader that goes away while the worker prints nothing (a pager quit) ends `logs -f`
    // then, successfully, not at the worker's next line.
    let mut gone = p.cmd().args(["logs", "-f", &id]).stdout(Stdio::piped()).stderr(Stdio::null()).spawn().expect("spawn");
    let mut first = [0u8; 4];
    gone.stdout.as_mut().expect("stdout").read_exact(&mut first).expect("its first bytes");
    assert_eq!(&first, b"line");
    drop(gone.stdout.take());
    let mut gone = Followed { child: gone, out: Arc::new(Mutex::new(String::new())) };
    assert_eq!(gone.exit_code(), 0, "ends when its reader goes");
    for i in 1..=3 {
        wait_for(&format!("line {i} in logs -f"), || logs.text().contains(&format!("line {i}\n")));
        wait_for(&format!("step {i} in timeline -f"), || timeline.text().contains(&format!("\"step {i}\"")));
        // The worker waits for its go: both still follow, and nothing later was printed.
        assert!(!logs.text().contains(&format!("line {}", i + 1)) && !logs.text().contains("the end"), "{}", logs.text());
        assert!(logs.running() && timeline.running(), "both follow while the worker works");
        std::fs::write(tmp.join(format!("go-{i}")), "").expect("go");
    }
    assert_eq!(logs.exit_code(), 0, "logs -f ends with its attempt");
    assert_eq!(timeline.exit_code(), 0, "timeline -f ends once the commission has settled");
    let status = reconciler.wait().expect("reconciler");
    assert!(status.success());
    assert_eq!(p.status(&id), "completed");
    // Everything was printed, the last lines too: what the commands print afterwards.
    assert_eq!(logs.text(), p.ok(&["logs", &id]));
    assert!(logs.text().contains("line 3\nrecorded event 3 for paced\nthe end\n"), "{}", logs.text());
    assert_eq!(timeline.text(), p.ok(&["timeline", "--json", &id]));
    let events: Vec<serde_json::Value> =
        timeline.text().lines().map(|l| serde_json::from_str(l).expect("one JSON object a line")).collect();
    assert!(events.iter().any(|e| e["kind"] == "status" && e["to"] == "completed"), "{events:?}");
}

#[test]
fn following_an_attempt_that_has_ended_prints_it_and_exits() {
    let p = Project::new(&["scribe"]);
    let id = p.create("scribe", "Hello", "Say hello.");
    p.settle();
    assert_eq!(p.ok(&["logs", "-f", &id]), p.ok(&["logs", &id]));
    assert_eq!(p.ok(&["timeline", "-f", &id]), p.ok(&["timeline", &id]));
}

/// A wave task's log and a plan's timeline, followed while the task works (it chats for a
/// while), end with the task and with the plan, everything printed; a meeting's timeline ends
/// once it is declined.
#[test]
fn a_wave_task_a_plan_and_a_meeting_are_followed_until_they_end() {
    let p = Project::new(&["mason", "counsel"]);
    let plans = p.root.join(".lore/plans");
    std::fs::create_dir_all(&plans).expect("mkdir");
    std::fs::write(
        plans.join("pl.md"),
        "---\ntitle: A plan\nwaves:\n  - - {id: talk, worker: mason, prompt: \"chat: 2\\nwrite: x.txt x\"}\n---\n",
    )
    .expect("plan");
    let task = "pl:exec:wave-1:task-1";
    let mut reconciler = p.cmd().args(["reconcile", "--once", "--wait", "--timeout", "120s"]).stdout(Stdio::null()).spawn().expect("spawn");
    wait_for("the task to start", || p.run(&["logs", task]).0 == 0);
    let mut log = Followed::start(&p, &["logs", "-f", task]);
    let mut plan = Followed::start(&p, &["timeline", "-f", "pl"]);
    let mut by_label = Followed::start(&p, &["plan", "logs", "-f", "pl", "talk"]);
    assert_eq!(log.exit_code(), 0, "logs -f ends with the task's attempt");
    assert_eq!(by_label.exit_code(), 0, "plan logs -f too");
    assert_eq!(plan.exit_code(), 0, "timeline -f ends once the plan has settled");
    assert!(reconciler.wait().expect("reconciler").success());
    assert_eq!(log.text(), p.ok(&["logs", task]));
    assert_eq!(by_label.text(), p.ok(&["plan", "logs", "pl", "talk"]));
    assert!(log.text().contains("still at it (3)"), "{}", log.text());
    assert_eq!(plan.text(), p.ok(&["timeline", "pl"]));
    assert!(plan.text().contains("-> completed"), "{}", plan.text());

    std::fs::write(p.root.join(".lore/meetings/ask.md"), "---\nworker: counsel\nstatus: requested\nagenda: a decision\n---\n")
        .expect("meeting");
    p.ok(&["reconcile", "--once"]);
    let mut meeting = Followed::start(&p, &["timeline", "-f", "--json", "ask"]);
    wait_for("the request in timeline -f", || meeting.text().contains("\"requested\""));
    assert!(meeting.running(), "a requested meeting is followed");
    p.ok(&["meeting", "decline", "ask"]);
    p.ok(&["reconcile", "--once"]);
    assert_eq!(meeting.exit_code(), 0, "timeline -f ends once the meeting is declined");
    assert_eq!(meeting.text(), p.ok(&["timeline", "--json", "ask"]));
}
