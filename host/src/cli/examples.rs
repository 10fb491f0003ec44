//! The example line every `--help` ends with. Commands whose derive
//! carries its own `after_help` keep it; the others get theirs from
//! [`EXAMPLES`], by their path below `capstan`.

use clap::Command;

/// (command path, example), for the commands without an `after_help`.
const EXAMPLES: &[(&str, &str)] = &[
    (
        "plugin",
        "capstan plugin run storage.wasm --facts facts/simplex.yaml",
    ),
    (
        "plugin run",
        "capstan plugin run storage.wasm --facts facts/simplex.yaml --chart rbd-provisioner",
    ),
    (
        "plugin inspect",
        "capstan plugin inspect storage.wasm -o json",
    ),
    (
        "plugin new",
        "capstan plugin new my-plugin --lang python && cd my-plugin && capstan plugin build",
    ),
    (
        "plugin build",
        "capstan plugin build my-plugin --out my-plugin.wasm",
    ),
    (
        "bundle",
        "capstan bundle build apps/shop --key keys/me.key --out shop-1.0.0.tgz",
    ),
    (
        "bundle build",
        "capstan bundle build apps/shop --key keys/me.key --out shop-1.0.0.tgz",
    ),
    (
        "bundle verify",
        "capstan bundle verify shop-1.0.0.tgz --trust keys/",
    ),
    ("bundle inspect", "capstan bundle inspect shop-1.0.0.tgz"),
    ("bundle lint", "capstan bundle lint apps/shop"),
    (
        "bundle push",
        "capstan bundle push shop-1.0.0.tgz oci://registry.example:5000/apps/shop:1.0.0",
    ),
    (
        "bundle pull",
        "capstan bundle pull oci://registry.example:5000/apps/shop:1.0.0 -o shop.tgz",
    ),
    (
        "template",
        "capstan template web ./charts/web --set replicaCount=2 -n shop",
    ),
    ("keygen", "capstan keygen --name me --out keys/"),
    (
        "store",
        "capstan store export dump.json --state /var/lib/capstan",
    ),
    (
        "store export",
        "capstan store export dump.json --state /var/lib/capstan",
    ),
    (
        "store import",
        "capstan store import dump.json --kubeconfig admin.conf --store-namespace capstan-system",
    ),
    (
        "serve",
        "capstan serve --trust keys/ --state /var/lib/capstan --keep-versions 3",
    ),
    (
        "app",
        "capstan app upload shop-1.0.0.tgz && capstan app apply shop",
    ),
    (
        "override",
        "capstan override set shop web --set replicaCount=3",
    ),
    ("override delete", "capstan override delete shop web"),
    (
        "volume",
        "capstan volume create data --node controller-0 --path /srv/data --size 10Gi",
    ),
    (
        "volume create",
        "capstan volume create data --node controller-0 --path /srv/data --size 10Gi -n shop",
    ),
    ("volume list", "capstan volume list -o json"),
    ("facts", "capstan facts show -o yaml"),
    (
        "platform",
        "capstan platform event storage-backend-changed backend=ceph-store",
    ),
    ("volume remove", "capstan volume remove data"),
];

/// `command` and every subcommand with its example appended.
pub fn with_examples(command: Command) -> Command {
    add(command, "")
}

fn add(mut command: Command, path: &str) -> Command {
    let names: Vec<String> = command
        .get_subcommands()
        .map(|c| c.get_name().to_owned())
        .collect();
    for name in names {
        let sub_path = if path.is_empty() {
            name.clone()
        } else {
            format!("{path} {name}")
        };
        command = command.mut_subcommand(&name, |sub| add(sub, &sub_path));
    }
    if command.get_after_help().is_none()
        && let Some((_, example)) = EXAMPLES.iter().find(|(p, _)| *p == path)
    {
        command = command.after_help(format!("Example: {example}"));
    }
    command
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::*;

    fn check(command: &Command, path: &str, missing: &mut Vec<String>) {
        if command.get_name() != "help" {
            let help = command
                .get_after_help()
                .map(ToString::to_string)
                .unwrap_or_default();
            let last = help.lines().last().unwrap_or_default();
            if !last.starts_with("Example: capstan") {
                missing.push(path.to_owned());
            }
        }
        for sub in command.get_subcommands() {
            check(sub, &format!("{path} {}", sub.get_name()), missing);
        }
    }

    #[test]
    fn every_help_ends_with_an_example() {
        let command = with_examples(super::super::Cli::command());
        let mut missing = Vec::new();
        check(&command, "capstan", &mut missing);
        assert!(missing.is_empty(), "no example: {missing:?}");
    }
}
