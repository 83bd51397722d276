//! Review before it lands (`review: required`): a submitted commission waits in `review`, its
//! work committed on its branch and nothing merged, until a person approves it (merged), sends
//! it back with feedback (a new attempt on the same branch, the feedback in its prompt) or
//! rejects it (cancelled, the branch kept); the same from the CLI, a `desired:` edit, JSON-RPC
//! and MCP; and a pass killed at any step of an approve or a revise converges.

use crate::common::*;

/// A worker that leaves what it was told in `seen-<attempt>.txt` (its prompt), adds a line to
/// `work.txt` (so attempt 2 shows whether it started from attempt 1's work), and submits.
const RECORDER: &str = r#"cp "$GUILD_HALL_PROMPT_FILE" "seen-$GUILD_HALL_ATTEMPT.txt"
echo "attempt $GUILD_HALL_ATTEMPT" >> work.txt
"$GUILD_HALL_BIN" toolbox submit-result --summary "did attempt $GUILD_HALL_ATTEMPT""#;

fn review_project() -> Project {
    let p = Project::new(&[]);
    p.script_worker("recorder", "full", RECORDER);
    p
}

fn commission(p: &Project, id: &str, review: &str) {
    p.write_commission(id, &format!("---\ntitle: Do the work\nworker: recorder\nreview: {review}\n---\nDo the work.\n"));
}

/// Attempt 1 submitted and held in review.
fn in_review(p: &Project, id: &str) {
    commission(p, id, "required");
    p.settle();
    assert_eq!(p.status(id), "review", "{}", p.artifact(id));
}

fn on_integration(p: &Project, path: &str) -> bool {
    std::process::Command::new("git")
        .args(["cat-file", "-e", &format!("claude/main:{path}")])
        .current_dir(&p.root)
        .status()
        .expect("git")
        .success()
}

#[test]
fn review_required_holds_the_work_on_its_branch_and_merges_nothing() {
    let p = review_project();
    let before = rev(&p, "claude/main");
    in_review(&p, "job");
    // The branch holds the attempt's work, committed; nothing merged; no worktree left.
    let branch = "claude/commission/job";
    assert!(git(&p.root, &["show", &format!("{branch}:work.txt")]).contains("attempt 1"));
    assert_eq!(rev(&p, "claude/main"), before, "nothing merged");
    assert!(!p.worktree("job").exists());
    let text = p.artifact("job");
    assert!(text.contains("result:") && text.contains("did attempt 1"), "{text}");
    let s = p.status_json("job");
    assert!(s["reason"].as_str().is_some_and(|r| r.contains("needs you") && r.contains("guild-hall approve job")), "{s}");
    // Settled: --wait does not wait for a person; a pass does nothing more.
    assert_eq!(p.ok(&["reconcile", "--once"]).trim(), "nothing to do");
    let tl = p.timeline("job");
    assert!(transitions(&tl).contains(&"in_progress>review".to_string()), "{tl:?}");
}

#[test]
fn approve_merges_once_and_completes() {
    let p = review_project();
    in_review(&p, "job");
    p.ok(&["approve", "job"]);
    p.settle();
    assert_eq!(p.status("job"), "completed");
    assert!(on_integration(&p, "work.txt"));
    assert!(trailers(&p).contains("Guild-Hall-Commission: job attempt 1"), "{}", trailers(&p));
    let tl = p.timeline("job");
    assert!(transitions(&tl).ends_with(&["in_progress>review".to_string(), "review>completed".to_string()]), "{tl:?}");
    assert!(!p.artifact("job").contains("desired:"));
}

#[test]
fn auto_review_merges_at_once_as_before() {
    let p = review_project();
    commission(&p, "job", "auto");
    p.settle();
    assert_eq!(p.status("job"), "completed");
    assert!(on_integration(&p, "work.txt"));
}

#[test]
fn the_project_and_the_package_say_review_and_the_commission_wins() {
    let p = review_project();
    p.config("review: required\n");
    p.write_commission("held", "---\ntitle: T\nworker: recorder\n---\nDo the work.\n");
    p.write_commission("mine", "---\ntitle: T\nworker: recorder\nreview: auto\n---\nDo the work.\n");
    p.settle();
    assert_eq!(p.status("held"), "review");
    assert_eq!(p.status("mine"), "completed");
}

#[test]
fn revise_continues_on_the_same_branch_with_the_feedback_in_its_prompt() {
    let p = review_project();
    in_review(&p, "job");
    let (code, _, err) = p.run(&["revise", "job"]);
    assert_ne!(code, 0, "a revision needs feedback");
    assert!(err.contains("needs feedback"), "{err}");
    p.ok(&["revise", "job", "-m", "make it shorter", "--at", "work.txt:1", "say more here"]);
    p.settle();
    assert_eq!(p.status("job"), "review", "{}", p.artifact("job"));
    let s = p.status_json("job");
    assert_eq!(s["attempt"], 2);
    let branch = "claude/commission/job";
    assert_eq!(s["branch"], branch);
    // Attempt 2 started from attempt 1's work, on the same branch, and read the feedback.
    let work = git(&p.root, &["show", &format!("{branch}:work.txt")]);
    assert_eq!(work, "attempt 1\nattempt 2\n");
    let seen = git(&p.root, &["show", &format!("{branch}:seen-2.txt")]);
    assert!(seen.starts_with("Do the work."), "{seen}");
    assert!(seen.contains("Feedback on attempt 1"), "{seen}");
    assert!(seen.contains("- make it shorter") && seen.contains("- work.txt:1: say more here"), "{seen}");
    assert!(!git(&p.root, &["show", &format!("{branch}:seen-1.txt")]).contains("Feedback"));
    assert!(!p.branches().iter().any(|b| b == "claude/commission/job+2"), "{:?}", p.branches());
    let text = p.artifact("job");
    assert!(!text.contains("desired:") && !text.contains("feedback:"), "{text}");
    // The feedback is kept in the timeline.
    let tl = p.timeline("job");
    let revise = tl.iter().find(|e| e["kind"] == "revise").expect("a revise event");
    assert_eq!(revise["after"], 1);
    assert_eq!(revise["feedback"][1]["path"], "work.txt");
    assert!(transitions(&tl).contains(&"review>dispatched".to_string()), "{tl:?}");
    // Approved: merged once, attempt 2's trailer.
    p.ok(&["approve", "job"]);
    p.settle();
    assert_eq!(p.status("job"), "completed");
    assert_eq!(git(&p.root, &["show", "claude/main:work.txt"]), "attempt 1\nattempt 2\n");
    assert!(trailers(&p).contains("Guild-Hall-Commission: job attempt 2"), "{}", trailers(&p));
}

#[test]
fn reject_cancels_and_keeps_the_branch() {
    let p = review_project();
    let before = rev(&p, "claude/main");
    in_review(&p, "job");
    p.ok(&["reject", "job", "-m", "not what I wanted"]);
    p.settle();
    assert_eq!(p.status("job"), "cancelled");
    assert_eq!(rev(&p, "claude/main"), before, "nothing merged");
    assert!(git(&p.root, &["show", "claude/commission/job:work.txt"]).contains("attempt 1"));
    let s = p.status_json("job");
    assert!(s["reason"].as_str().is_some_and(|r| r.contains("not what I wanted") && r.contains("claude/commission/job")), "{s}");
}

#[test]
fn a_verdict_on_work_not_in_review_is_refused_and_nothing_written() {
    let p = review_project();
    commission(&p, "job", "auto");
    p.settle();
    let before = p.artifact("job");
    for args in [&["approve", "job"][..], &["revise", "job", "-m", "x"], &["reject", "job"]] {
        let (code, _, err) = p.run(args);
        assert_ne!(code, 0, "{args:?}");
        assert!(err.contains("only work in review") && err.contains("nothing written"), "{err}");
    }
    assert_eq!(p.artifact("job"), before);
}

#[test]
fn desired_edits_do_what_the_commands_do() {
    let p = review_project();
    in_review(&p, "a");
    in_review(&p, "b");
    in_review(&p, "c");
    let edit = |id: &str, add: &str| {
        let text = p.artifact(id).replacen("---\n", &format!("---\n{add}"), 1);
        p.write_commission(id, &text);
    };
    edit("a", "desired: approved\n");
    edit("b", "desired: revised\nfeedback:\n- text: try again\n- {text: here, path: work.txt, line: 1}\n");
    edit("c", "desired: rejected\n");
    p.settle();
    assert_eq!(p.status("a"), "completed");
    assert_eq!(p.status("b"), "review");
    assert_eq!(p.status_json("b")["attempt"], 2);
    let seen = git(&p.root, &["show", "claude/commission/b:seen-2.txt"]);
    assert!(seen.contains("- try again") && seen.contains("- work.txt:1: here"), "{seen}");
    assert_eq!(p.status("c"), "cancelled");
    // A request of work not in review is refused, saying why, and removed.
    edit("a", "desired: revised\nfeedback: [{text: late}]\n");
    p.settle();
    let text = p.artifact("a");
    assert!(!text.contains("\ndesired:") && !text.contains("\nfeedback:"), "{text}");
    assert!(p.timeline("a").iter().any(|e| e["kind"] == "refused"));
}

/// One JSON-RPC call over the watcher's socket.
fn rpc(sock: &std::path::Path, method: &str, params: serde_json::Value) -> serde_json::Value {
    use std::io::{Read, Write};
    let body = serde_json::json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params}).to_string();
    let mut s = std::os::unix::net::UnixStream::connect(sock).expect("connect");
    let req = format!("POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}", body.len());
    s.write_all(req.as_bytes()).expect("send");
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    let reply = out.split_once("\r\n\r\n").map(|(_, b)| b.to_string()).unwrap_or_default();
    serde_json::from_str(&reply).expect("json reply")
}

/// A pass to settle once the one a face started (its kick) lets go of the project.
fn settle_after_kick(p: &Project) {
    p.ok(&["reconcile", "--once", "--wait", "--wait-lock", "--timeout", "120s"]);
}

/// MCP (`mcp --manager`), JSON-RPC (`worker/*`) and the CLI (`job`) write the same request as
/// the commands, and refuse alike what is not in review.
#[test]
fn json_rpc_and_mcp_review_as_the_commands_do() {
    let p = review_project();
    in_review(&p, "m");
    in_review(&p, "r");
    // MCP: status says review; a revise with feedback; refused when not in review.
    let s = p.manager_call("status", serde_json::json!({"jobId": "m"}));
    assert_eq!(s["structuredContent"]["status"], "review", "{s}");
    let r = p.manager_call("result", serde_json::json!({"jobId": "m"}));
    assert_eq!(r["structuredContent"]["output"], "did attempt 1", "what is reviewed: {r}");
    let r = p.manager_call("revise", serde_json::json!({"jobId": "m", "feedback": [{"text": "again", "path": "work.txt", "line": 1}]}));
    assert_eq!(r["structuredContent"], serde_json::json!({"jobId": "m", "requested": "revised"}), "{r}");
    settle_after_kick(&p);
    assert_eq!(p.status_json("m")["attempt"], 2);
    assert!(git(&p.root, &["show", "claude/commission/m:seen-2.txt"]).contains("- work.txt:1: again"));
    let r = p.manager_call("approve", serde_json::json!({"jobId": "m"}));
    assert_eq!(r["structuredContent"]["requested"], "approved", "{r}");
    settle_after_kick(&p);
    assert_eq!(p.status("m"), "completed");
    let refused = p.manager_call("approve", serde_json::json!({"jobId": "m"}));
    assert_eq!(refused["isError"], true, "{refused}");
    assert!(refused["content"][0]["text"].as_str().is_some_and(|t| t.contains("only work in review")), "{refused}");
    // The CLI face of the same catalogue.
    let (code, _, err) = p.run(&["job", "revise", "--job-id", "r"]);
    assert_ne!(code, 0, "feedback is required: {err}");
    // JSON-RPC over a watcher's socket: the reject, carried out by the watcher.
    let sock = p.tmp.path().join("gh.sock");
    let _svc = Service::start(&p, &[], &["--socket", sock.to_str().expect("utf8")]);
    let v = rpc(&sock, "worker/reject", serde_json::json!({"jobId": "r", "message": "no thanks"}));
    assert_eq!(v["result"], serde_json::json!({"jobId": "r", "requested": "rejected"}), "{v}");
    wait_status(&p, "r", "cancelled");
    let bad = rpc(&sock, "worker/approve", serde_json::json!({"jobId": "r"}));
    assert!(bad["error"]["message"].as_str().is_some_and(|m| m.contains("only work in review")), "{bad}");
}

/// One pass with the fault switch at `fault`: it must stop dead there (exit 86).
fn killed_at(p: &Project, fault: &str) {
    let out = p.cmd().args(["reconcile", "--once"]).env("GUILD_HALL_FAULT", fault).output().expect("runs");
    assert_eq!(out.status.code(), Some(86), "{fault}: {}", String::from_utf8_lossy(&out.stderr));
}

fn merges_of(p: &Project, id: &str, attempt: u32) -> usize {
    git(&p.root, &["log", "--format=%b", "claude/main"]).matches(&format!("Guild-Hall-Commission: {id} attempt {attempt}")).count()
}

/// Killed after each step of the move to review (the work secured, the update written; the
/// update's own steps are those of every update, killed below): the next pass converges to review, the work on the branch, nothing merged.
#[test]
fn a_pass_killed_at_any_step_of_the_hold_converges() {
    for fault in ["hold:1", "hold:2"] {
        let p = review_project();
        commission(&p, "job", "required");
        let before = rev(&p, "claude/main");
        p.pass_until_fault(fault);
        p.settle();
        assert_eq!(p.status("job"), "review", "{fault}: {}", p.artifact("job"));
        assert_eq!(rev(&p, "claude/main"), before, "{fault}: nothing merged");
        assert!(git(&p.root, &["show", "claude/commission/job:work.txt"]).contains("attempt 1"), "{fault}");
        assert!(!p.worktree_list().contains("commission-job"), "{fault}");
    }
}

/// Killed at every step of an approval (the merge, the update, the worktree's removal, each
/// step of the update's write): merged exactly once, completed.
#[test]
fn a_pass_killed_at_any_step_of_an_approval_merges_once() {
    let faults = [
        "finish:1",
        "finish:2",
        "finish:3",
        "commission-apply:1",
        "commission-apply:2",
        "commission-apply:3",
        "commission-apply:4",
        "commission-apply:5",
    ];
    for fault in faults {
        let p = review_project();
        in_review(&p, "job");
        p.ok(&["approve", "job"]);
        killed_at(&p, fault);
        p.settle();
        assert_eq!(p.status("job"), "completed", "{fault}: {}", p.artifact("job"));
        assert_eq!(merges_of(&p, "job", 1), 1, "{fault}: merged exactly once");
        assert_eq!(p.timeline("job").iter().filter(|e| e["kind"] == "merge").count(), 1, "{fault}");
        assert!(!p.artifact("job").contains("\ndesired:"), "{fault}");
    }
}

/// Killed at every step of a revision's dispatch: one attempt 2, on the same branch, given the
/// feedback exactly once; none of it lost.
#[test]
fn a_pass_killed_at_any_step_of_a_revision_loses_no_feedback() {
    let faults = [
        "commission-apply:1",
        "commission-apply:2",
        "commission-apply:3",
        "commission-apply:4",
        "commission-apply:5",
        "dispatch:1",
        "dispatch:2",
        "dispatch:3",
        "dispatch:4",
    ];
    for fault in faults {
        let p = review_project();
        in_review(&p, "job");
        p.ok(&["revise", "job", "-m", "keep going", "--at", "work.txt:1", "and here"]);
        killed_at(&p, fault);
        p.settle();
        assert_eq!(p.status("job"), "review", "{fault}: {}", p.artifact("job"));
        assert_eq!(p.status_json("job")["attempt"], 2, "{fault}");
        let work = git(&p.root, &["show", "claude/commission/job:work.txt"]);
        assert_eq!(work, "attempt 1\nattempt 2\n", "{fault}: one attempt 2, from attempt 1's work");
        let seen = git(&p.root, &["show", "claude/commission/job:seen-2.txt"]);
        assert_eq!(seen.matches("Feedback on attempt 1").count(), 1, "{fault}: {seen}");
        assert!(seen.contains("- keep going") && seen.contains("- work.txt:1: and here"), "{fault}: {seen}");
        assert_eq!(p.timeline("job").iter().filter(|e| e["kind"] == "revise").count(), 1, "{fault}");
        assert!(!p.branches().iter().any(|b| b.ends_with("job+2")), "{fault}");
        assert_eq!(merges_of(&p, "job", 1) + merges_of(&p, "job", 2), 0, "{fault}: nothing merged");
    }
}

/// A revision through the real Claude Code CLI (against the tests' stand-in for the model API):
/// attempt 2 resumes attempt 1's session — the model is sent attempt 1's conversation — and is
/// given the feedback; its work lands on the same branch.
#[test]
fn a_revision_resumes_the_real_claude_code_session_with_the_feedback() {
    use crate::worker::claude_code::{install_package, real_claude, real_run, FakeApi};
    let claude = real_claude();
    let p = Project::new(&[]);
    install_package(&p, "claude-code");
    let submit = |n: &str| {
        vec![
            serde_json::json!({"tool_use": {"name": "mcp__guild-hall__write_artifact", "input": {"path": ".lore/answer.md", "content": format!("answer {n}\n")}}}),
            serde_json::json!({"tool_use": {"name": "mcp__guild-hall__submit_result", "input": {"summary": format!("answer {n}"), "artifacts": [".lore/answer.md"]}}}),
            serde_json::json!({"text": format!("ATTEMPT-{n}-SAID-THIS")}),
        ]
    };
    let script: Vec<serde_json::Value> = submit("1").into_iter().chain(submit("2")).collect();
    let api = FakeApi::start(p.tmp.path(), &serde_json::Value::Array(script));
    p.write_commission("ask", "---\nworker: claude-code\nreview: required\n---\nWrite the answer.\n");
    let out = real_run(&p, &api, &claude);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(p.status("ask"), "review", "{}", p.ok(&["logs", "ask"]));
    let first = std::fs::read_to_string(&api.requests).expect("requests").lines().count();
    p.ok(&["revise", "ask", "-m", "FEEDBACK-7731: say more"]);
    let out = real_run(&p, &api, &claude);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(p.status("ask"), "review", "{}", p.ok(&["logs", "ask", "--attempt", "2"]));
    assert_eq!(p.status_json("ask")["attempt"], 2);
    let requests = std::fs::read_to_string(&api.requests).expect("requests");
    // The agent's first turn of attempt 2 (side requests, such as counting tokens, aside).
    let asked = requests
        .lines()
        .skip(first)
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|r| r["path"].as_str().is_some_and(|p| !p.contains("count_tokens")) && r["body"]["tools"].is_array())
        .map(|r| r["body"]["messages"].to_string())
        .find(|m| m.contains("FEEDBACK-7731"))
        .expect("attempt 2 asked the model, given the feedback");
    assert!(asked.contains("FEEDBACK-7731: say more") && asked.contains("Feedback on attempt 1"), "the feedback: {asked}");
    assert!(asked.contains("ATTEMPT-1-SAID-THIS"), "the resumed session holds attempt 1's conversation: {asked}");
    let log = p.ok(&["logs", "ask", "--attempt", "2"]);
    assert!(git(&p.root, &["show", "claude/commission/ask:.lore/answer.md"]).contains("answer 2"), "{log}");
}

/// A revision's worker is told the session its revised attempt's stream announced (here in
/// guild-hall's own lines, as the ACP client prints them), and nothing else: a first attempt
/// gets none, and a worker's line of another shape is not taken for one.
#[test]
fn a_revision_is_told_the_session_of_the_attempt_it_revises() {
    let p = Project::new(&[]);
    p.script_worker(
        "talker",
        "full",
        r#"echo "session=${GUILD_HALL_SESSION_ID:-none}" > "told-$GUILD_HALL_ATTEMPT.txt"
echo '{"type":"text_delta","text":"{\"type\":\"session\",\"id\":\"fake\"}"}'
echo "{\"type\":\"session\",\"id\":\"sess-$GUILD_HALL_ATTEMPT-abc\"}"
"$GUILD_HALL_BIN" toolbox submit-result --summary done"#,
    );
    p.write_commission("job", "---\ntitle: T\nworker: talker\nreview: required\n---\nTalk.\n");
    p.settle();
    assert_eq!(p.status("job"), "review");
    p.ok(&["revise", "job", "-m", "again"]);
    p.settle();
    let told = |n: u32| git(&p.root, &["show", &format!("claude/commission/job:told-{n}.txt")]);
    assert_eq!(told(1), "session=none\n");
    assert_eq!(told(2), "session=sess-1-abc\n", "attempt 2 resumes attempt 1's session");
    p.ok(&["revise", "job", "-m", "once more"]);
    p.settle();
    assert_eq!(told(3), "session=sess-2-abc\n", "attempt 3 the one attempt 2 ran in");
}
