//! Leader election on a `coordination.k8s.io/v1` Lease (issue 26), on the
//! real control plane (the double's Lease and concurrency semantics are
//! our own): two candidates, each with its own connection as the
//! `capstan` ServiceAccount; one leads; the other takes over only once
//! the Lease has expired after a leader stopped without releasing it (a
//! crash), and at once after a clean stop released it; a restarted
//! candidate follows while the Lease is held.

use std::time::{Duration, Instant};

use capstan::kube::cluster::lease::{Election, LeaseConfig};
use capstan::kube::{ClusterOptions, ClusterTarget, Connect};

use crate::control_plane::{ControlPlane, control_plane};

const NAMESPACE: &str = "capstan-lease-test";
// Short enough for a test, long enough that a loaded CI machine's
// stalls do not end a healthy leader's term (client-go's ratios).
const LEASE: Duration = Duration::from_secs(6);
const RENEW: Duration = Duration::from_secs(4);
const RETRY: Duration = Duration::from_secs(1);

fn candidate(cp: &ControlPlane, identity: &str) -> (ClusterTarget, Election) {
    let target = ClusterTarget::connect(
        &Connect::Kubeconfig {
            path: cp.capstan_kubeconfig(),
            context: None,
        },
        ClusterOptions::default(),
    )
    .expect("connecting to the control plane");
    let config = LeaseConfig {
        lease_duration: LEASE,
        renew_deadline: RENEW,
        retry_period: RETRY,
        ..LeaseConfig::new(NAMESPACE, "capstan", identity)
    };
    let election = target.elect(config).expect("starting the election");
    (target, election)
}

/// A field of the Lease's spec, as kubectl prints it.
fn lease_field(cp: &ControlPlane, field: &str) -> String {
    cp.kubectl_ok(&[
        "get",
        "lease",
        "capstan",
        "-n",
        NAMESPACE,
        "-o",
        &format!("jsonpath={{.spec.{field}}}"),
    ])
    .trim()
    .to_string()
}

fn wait(what: &str, within: Duration, check: impl Fn() -> bool) -> Duration {
    let started = Instant::now();
    while !check() {
        assert!(started.elapsed() < within, "not within {within:?}: {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
    started.elapsed()
}

#[test]
fn one_candidate_leads_and_the_other_takes_over_only_when_the_lease_expires() {
    let Some(cp) = control_plane() else { return };
    cp.delete_namespace(NAMESPACE);
    cp.kubectl_ok(&["create", "namespace", NAMESPACE]);
    let (_a_target, a) = candidate(&cp, "candidate-a");
    let (_b_target, b) = candidate(&cp, "candidate-b");
    wait("a leader", Duration::from_secs(10), || {
        a.leadership().is_leader() || b.leadership().is_leader()
    });
    // Never two at once, over a few renewals.
    for _ in 0..20 {
        assert!(
            !(a.leadership().is_leader() && b.leadership().is_leader()),
            "two leaders"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let (leader, follower, leader_name, follower_name) = if a.leadership().is_leader() {
        (&a, &b, "candidate-a", "candidate-b")
    } else {
        (&b, &a, "candidate-b", "candidate-a")
    };
    assert_eq!(follower.leadership().holder().as_deref(), Some(leader_name));
    assert_eq!(lease_field(&cp, "holderIdentity"), leader_name);

    // The leader stops without releasing (a crash): the follower waits
    // for the Lease to expire on its own clock, then takes it.
    leader.stop(false);
    let took = wait(
        "the follower taking over",
        LEASE + RENEW + Duration::from_secs(3),
        || follower.leadership().is_leader(),
    );
    assert!(
        took + RETRY.mul_f64(1.2) >= LEASE,
        "taken over after {took:?}, before the {LEASE:?} lease could expire"
    );
    eprintln!("lease: a crashed leader's lease taken over after {took:?} ({LEASE:?} lease)");

    // The old leader comes back: it follows while the Lease is held.
    let (_c_target, back) = candidate(&cp, leader_name);
    std::thread::sleep(LEASE);
    assert!(
        !back.leadership().is_leader(),
        "a returning candidate took a held lease"
    );
    assert_eq!(back.leadership().holder().as_deref(), Some(follower_name));

    // A clean stop releases it: the other takes it at its next attempts.
    follower.stop(true);
    let took = wait(
        "the returning candidate taking a released lease",
        Duration::from_secs(5),
        || back.leadership().is_leader(),
    );
    assert!(
        took < LEASE,
        "a released lease waited out its duration: {took:?}"
    );
    let transitions = cp.kubectl_ok(&[
        "get",
        "lease",
        "capstan",
        "-n",
        NAMESPACE,
        "-o",
        "jsonpath={.spec.leaseTransitions}",
    ]);
    assert_eq!(
        transitions.trim(),
        "2",
        "two hand-overs after the first holder"
    );
    back.stop(true);
    cp.delete_namespace(NAMESPACE);
}
