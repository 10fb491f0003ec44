//! The simulated controllers: a tick (every ~50ms) that, once an object's
//! spec has been unchanged for `ready_after`, writes the status a healthy
//! cluster would (Deployments, StatefulSets and their claims, DaemonSets,
//! ReplicaSets, Jobs, Pods, PVCs, PVs, CRDs). Objects whose status a test
//! set with `set_status` are left alone. Only writes status, except the
//! PersistentVolumeClaims a StatefulSet's volumeClaimTemplates ask for.

use crate::discovery;
use crate::store::{ObjKey, Store};
use crate::util;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

/// The most claims made per volumeClaimTemplate.
const MAX_CLAIM_ORDINALS: i64 = 1000;

/// One pass over the store.
pub fn tick(store: &mut Store, ready_after: Duration) {
    let now = Instant::now();
    let mut updates: Vec<(ObjKey, Value)> = Vec::new();
    let mut claims: Vec<(ObjKey, Value)> = Vec::new();
    for (key, stored) in &store.objects {
        if stored.status_pinned
            || stored.object["metadata"].get("deletionTimestamp").is_some()
            || now.duration_since(stored.spec_changed) < ready_after
        {
            continue;
        }
        let o = &stored.object;
        let desired = match (key.group.as_str(), key.plural.as_str()) {
            ("apps", "deployments") => Some(deployment(o)),
            ("apps", "statefulsets") => {
                claims.extend(statefulset_claims(key, o));
                Some(statefulset(o))
            }
            ("apps", "daemonsets") => Some(daemonset(o)),
            ("apps", "replicasets") => Some(replicaset(o)),
            ("batch", "jobs") => Some(job(o)),
            ("", "pods") => Some(pod(o)),
            ("", "persistentvolumeclaims") => Some(pvc(o)),
            ("", "persistentvolumes") => Some(pv(store, o)),
            ("apiextensions.k8s.io", "customresourcedefinitions") => Some(crd(o)),
            ("", "services") if o["spec"]["type"] == "LoadBalancer" => {
                Some(json!({"loadBalancer": {"ingress": [{"ip": "127.0.0.1"}]}}))
            }
            _ => None,
        };
        if let Some(desired) = desired
            && without_times(&desired) != without_times(&o["status"])
        {
            updates.push((key.clone(), keep_times(desired, &o["status"])));
        }
    }
    for (key, status) in updates {
        store.write_status(&key, status, false);
    }
    let Some(pvc_resource) = discovery::builtins()
        .iter()
        .find(|r| r.plural == "persistentvolumeclaims")
    else {
        return;
    };
    for (key, mut claim) in claims {
        if store.objects.contains_key(&key) {
            continue;
        }
        let key = ObjKey::new(pvc_resource, &key.namespace, &key.name);
        store.prepare(&key, &mut claim, None);
        store.commit(key, claim, Vec::new(), true);
    }
}

fn replicas(o: &Value) -> i64 {
    o["spec"]["replicas"].as_i64().unwrap_or(1)
}

fn generation(o: &Value) -> i64 {
    o["metadata"]["generation"].as_i64().unwrap_or(1)
}

fn condition(kind: &str, status: &str, reason: &str, message: &str) -> Value {
    let now = util::now_rfc3339();
    json!({"type": kind, "status": status, "reason": reason, "message": message,
           "lastTransitionTime": now, "lastUpdateTime": now})
}

fn deployment(o: &Value) -> Value {
    let n = replicas(o);
    let name = o["metadata"]["name"].as_str().unwrap_or_default();
    json!({
        "observedGeneration": generation(o),
        "replicas": n, "updatedReplicas": n, "readyReplicas": n, "availableReplicas": n,
        "conditions": [
            condition("Available", "True", "MinimumReplicasAvailable", "Deployment has minimum availability."),
            condition("Progressing", "True", "NewReplicaSetAvailable",
                &format!("ReplicaSet \"{name}-double\" has successfully progressed.")),
        ],
    })
}

fn statefulset(o: &Value) -> Value {
    let n = replicas(o);
    let revision = format!(
        "{}-{}",
        o["metadata"]["name"].as_str().unwrap_or_default(),
        generation(o)
    );
    json!({
        "observedGeneration": generation(o),
        "replicas": n, "readyReplicas": n, "currentReplicas": n, "updatedReplicas": n,
        "availableReplicas": n, "currentRevision": revision, "updateRevision": revision,
        "collisionCount": 0,
    })
}

fn statefulset_claims(key: &ObjKey, o: &Value) -> Vec<(ObjKey, Value)> {
    let sts = o["metadata"]["name"].as_str().unwrap_or_default();
    let mut out = Vec::new();
    let Some(templates) = o["spec"]["volumeClaimTemplates"].as_array() else {
        return out;
    };
    for template in templates {
        let Some(tname) = template["metadata"]["name"].as_str() else {
            continue;
        };
        // Bounded, so a silly replica count cannot stall the tick.
        for ordinal in 0..replicas(o).clamp(0, MAX_CLAIM_ORDINALS) {
            let name = format!("{tname}-{sts}-{ordinal}");
            let claim = json!({
                "apiVersion": "v1", "kind": "PersistentVolumeClaim",
                "metadata": {"name": name, "namespace": key.namespace,
                             "labels": template["metadata"]["labels"].clone()},
                "spec": template["spec"].clone(),
            });
            let claim_key = ObjKey {
                group: String::new(),
                plural: "persistentvolumeclaims".into(),
                namespace: key.namespace.clone(),
                name,
            };
            out.push((claim_key, strip_null_labels(claim)));
        }
    }
    out
}

fn strip_null_labels(mut claim: Value) -> Value {
    if claim["metadata"]["labels"].is_null()
        && let Some(m) = claim["metadata"].as_object_mut()
    {
        m.remove("labels");
    }
    claim
}

fn daemonset(o: &Value) -> Value {
    json!({
        "observedGeneration": generation(o),
        "desiredNumberScheduled": 1, "currentNumberScheduled": 1, "updatedNumberScheduled": 1,
        "numberAvailable": 1, "numberReady": 1, "numberMisscheduled": 0,
    })
}

fn replicaset(o: &Value) -> Value {
    let n = replicas(o);
    json!({"observedGeneration": generation(o), "replicas": n, "readyReplicas": n,
           "availableReplicas": n, "fullyLabeledReplicas": n})
}

fn job(o: &Value) -> Value {
    let start = o["metadata"]["creationTimestamp"].clone();
    json!({
        "succeeded": 1, "active": 0, "ready": 0, "startTime": start,
        "completionTime": util::now_rfc3339(),
        "conditions": [
            condition("SuccessCriteriaMet", "True", "CompletionsReached", "Reached expected number of succeeded pods"),
            condition("Complete", "True", "CompletionsReached", "Reached expected number of succeeded pods"),
        ],
    })
}

fn pod(o: &Value) -> Value {
    let once = matches!(
        o["spec"]["restartPolicy"].as_str(),
        Some("Never" | "OnFailure")
    );
    let containers: Vec<Value> = o["spec"]["containers"]
        .as_array()
        .map(|cs| {
            cs.iter()
                .map(|c| {
                    json!({"name": c["name"], "image": c["image"], "ready": !once,
                                "restartCount": 0, "started": !once})
                })
                .collect()
        })
        .unwrap_or_default();
    if once {
        json!({"phase": "Succeeded", "containerStatuses": containers, "conditions": [
            condition("Ready", "False", "PodCompleted", ""),
        ]})
    } else {
        json!({"phase": "Running", "podIP": "10.244.0.10", "containerStatuses": containers, "conditions": [
            condition("Initialized", "True", "", ""),
            condition("ContainersReady", "True", "", ""),
            condition("Ready", "True", "", ""),
            condition("PodScheduled", "True", "", ""),
        ]})
    }
}

fn pvc(o: &Value) -> Value {
    json!({
        "phase": "Bound",
        "accessModes": o["spec"]["accessModes"].clone(),
        "capacity": o["spec"]["resources"]["requests"].clone(),
    })
}

fn pv(store: &Store, o: &Value) -> Value {
    let claim = &o["spec"]["claimRef"];
    let Some(name) = claim["name"].as_str() else {
        return json!({"phase": "Available"});
    };
    let key = ObjKey {
        group: String::new(),
        plural: "persistentvolumeclaims".into(),
        namespace: claim["namespace"].as_str().unwrap_or("default").to_string(),
        name: name.to_string(),
    };
    let bound = store.objects.get(&key).is_some_and(|c| {
        claim["uid"]
            .as_str()
            .is_none_or(|uid| c.object["metadata"]["uid"].as_str() == Some(uid))
    });
    if bound {
        json!({"phase": "Bound"})
    } else if o["status"]["phase"] == "Bound" || o["status"]["phase"] == "Released" {
        json!({"phase": "Released"})
    } else {
        // A claimRef to a claim not made yet: the volume waits for it.
        json!({"phase": "Available"})
    }
}

fn crd(o: &Value) -> Value {
    let versions: Vec<Value> = o["spec"]["versions"]
        .as_array()
        .map(|vs| {
            vs.iter()
                .filter(|v| v["storage"] == true)
                .map(|v| v["name"].clone())
                .collect()
        })
        .unwrap_or_default();
    json!({
        "acceptedNames": o["spec"]["names"].clone(),
        "storedVersions": versions,
        "conditions": [
            condition("NamesAccepted", "True", "NoConflicts", "no conflicts found"),
            condition("Established", "True", "InitialNamesAccepted", "the initial names have been accepted"),
        ],
    })
}

const TIME_FIELDS: &[&str] = &["lastTransitionTime", "lastUpdateTime", "completionTime"];

fn without_times(status: &Value) -> Value {
    let mut s = status.clone();
    if let Some(m) = s.as_object_mut() {
        m.remove("completionTime");
        if let Some(cs) = m.get_mut("conditions").and_then(Value::as_array_mut) {
            for c in cs.iter_mut().filter_map(Value::as_object_mut) {
                for f in TIME_FIELDS {
                    c.remove(*f);
                }
            }
        }
    }
    s
}

/// Keeps the timestamps of conditions that did not change.
fn keep_times(mut desired: Value, current: &Value) -> Value {
    if let Some(t) = current.get("completionTime")
        && let Some(m) = desired.as_object_mut()
        && m.contains_key("completionTime")
    {
        m.insert("completionTime".into(), t.clone());
    }
    let old = current["conditions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    if let Some(cs) = desired.get_mut("conditions").and_then(Value::as_array_mut) {
        for c in cs.iter_mut() {
            let same = old
                .iter()
                .find(|o| o["type"] == c["type"] && o["status"] == c["status"]);
            if let (Some(same), Some(c)) = (same, c.as_object_mut()) {
                for f in TIME_FIELDS {
                    if let Some(t) = same.get(*f) {
                        c.insert((*f).to_string(), t.clone());
                    }
                }
            }
        }
    }
    desired
}
