//! What a driver lets a spec run beyond what every cluster may: the etcd flags of
//! `spec.etcd.options` (`OptionLeave`, applied by `keep_options`) and the images of
//! `spec.imageRepository` and of the restore and recovery pods (`spec.restore.toolsImage`,
//! `spec.recovery.toolsImage`: `ImageLeave`, applied by `keep_images`). The operator's flags set
//! both (`operate --allow-etcd-option`, `--allow-image-prefix`); the admission policy on
//! EtcdClusters (`objects::admission::spec`) holds the same lists at the API server, whoever
//! writes the spec. Pure.

use k8s_openapi::api::core::v1::Container;

use super::{
    DEFAULT_IMAGE_REPOSITORY, DEFAULT_TOOLS_IMAGE, Desired, InvalidSpec, OptionLeave, invalid,
    keep_options,
};

/// The repository of the project's own image (`DEFAULT_TOOLS_IMAGE`'s, the operator's).
pub const TOOLS_REPOSITORY: &str = "ghcr.io/kubectl-etcd/kubectl-etcd";

/// The image prefixes every driver allows: etcd's release images and the project's own.
pub const DEFAULT_IMAGE_PREFIXES: [&str; 2] = [DEFAULT_IMAGE_REPOSITORY, TOOLS_REPOSITORY];

/// The spec fields that name an image: etcd's repository, the restore and the recovery pods'
/// tools image (the admission policy checks the same, `objects::admission::spec`).
pub const IMAGE_FIELDS: [&str; 4] = [
    "spec.imageRepository",
    "spec.restore.toolsImage",
    "spec.recovery.toolsImage",
    "spec.backup.drill.toolsImage",
];

/// The flag that adds an image prefix (the operator's, `install --operator`'s and the CLI's).
pub const ALLOW_IMAGE_PREFIX_FLAG: &str = "--allow-image-prefix";

/// Whether `image` (a repository, or a reference with a tag or digest) lies under `prefix`: the
/// same repository, or below it on a boundary (`registry.example/etcd` is not under
/// `registry.example/et`); a prefix ending in `/` takes everything below it. The admission
/// policy's CEL says the same (`objects::admission::spec`).
pub fn under_prefix(image: &str, prefix: &str) -> bool {
    match image.strip_prefix(prefix) {
        Some(_) if prefix.is_empty() => false,
        Some(rest) => rest.is_empty() || prefix.ends_with('/') || rest.starts_with(['/', ':', '@']),
        None => false,
    }
}

/// Which images a driver lets a spec run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ImageLeave {
    /// Any image: a driver whose user could run any image directly.
    Any,
    /// Those under `DEFAULT_IMAGE_PREFIXES` and under these (`--allow-image-prefix`).
    Prefixes(Vec<String>),
}

impl ImageLeave {
    /// Whether `image` may run.
    pub fn allows(&self, image: &str) -> bool {
        match self {
            ImageLeave::Any => true,
            ImageLeave::Prefixes(extra) => DEFAULT_IMAGE_PREFIXES
                .iter()
                .copied()
                .chain(extra.iter().map(String::as_str))
                .any(|p| under_prefix(image, p)),
        }
    }
}

/// What a driver lets a spec set beyond what every cluster may: etcd flags and images.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Leave {
    pub options: OptionLeave,
    pub images: ImageLeave,
}

impl Leave {
    /// Anything: a person's CLI, who could write any flag or image into the StatefulSet.
    pub const ANY: Leave = Leave {
        options: OptionLeave::Any,
        images: ImageLeave::Any,
    };

    /// The operator's: the tuning flags and `options`, the default image prefixes and `prefixes`.
    pub fn operator(options: Vec<String>, prefixes: Vec<String>) -> Leave {
        Leave {
            options: OptionLeave::Tuning(options),
            images: ImageLeave::Prefixes(prefixes),
        }
    }
}

/// The error of an image off the list, at `field`: the image, and both ways out.
fn image_not_allowed(field: &'static str, image: &str, what: &str) -> InvalidSpec {
    invalid(
        field,
        format!(
            "{image:?} is not under an image prefix this operator allows{what}; use an image under \
             {}, or give `{ALLOW_IMAGE_PREFIX_FLAG} PREFIX` to the operator (`kubectl etcd install \
             --operator {ALLOW_IMAGE_PREFIX_FLAG}`, Helm value allowImagePrefixes) and to the CLI",
            DEFAULT_IMAGE_PREFIXES.join(" or ")
        ),
    )
}

/// The repository of image reference `image` (without its tag or digest).
fn repository_of(image: &str) -> &str {
    let image = image.split_once('@').map_or(image, |(r, _)| r);
    match image.rsplit_once(':') {
        Some((repo, tag)) if !tag.contains('/') => repo,
        _ => image,
    }
}

/// The spec's images as a pass applies them: a repository off the list that the members run
/// already is kept (the cluster is not changed behind its owner's back); any other is replaced
/// by the running members' repository, or etcd's default one for a new cluster; a tools image
/// off the list by the default tools image. Either way the cluster's `SpecRefused` condition
/// names the field. `running`: the member image of the StatefulSet's template (`None`: no
/// StatefulSet yet). Pure.
pub fn keep_images(mut d: Desired, running: Option<&str>, leave: &ImageLeave) -> Desired {
    if !leave.allows(&d.image_repository) {
        let running = running.map(repository_of);
        if running == Some(d.image_repository.as_str()) {
            d.refused.push(image_not_allowed(
                IMAGE_FIELDS[0],
                &d.image_repository,
                " (the running members keep it until it is changed)",
            ));
        } else {
            let instead = running.unwrap_or(DEFAULT_IMAGE_REPOSITORY).to_string();
            d.refused.push(image_not_allowed(
                IMAGE_FIELDS[0],
                &d.image_repository,
                &format!(" (the members run {instead})"),
            ));
            let tag = d.image[d.image_repository.len().min(d.image.len())..].to_string();
            d.image = format!("{instead}{tag}");
            d.image_repository = instead;
        }
    }
    let tools = [
        (
            IMAGE_FIELDS[1],
            d.restore.as_mut().map(|r| &mut r.tools_image),
        ),
        (
            IMAGE_FIELDS[2],
            d.recovery.as_mut().map(|r| &mut r.tools_image),
        ),
        (
            IMAGE_FIELDS[3],
            d.backup
                .as_mut()
                .and_then(|b| b.drill.as_mut())
                .map(|r| &mut r.tools_image),
        ),
    ];
    let mut refused = Vec::new();
    for (field, image) in tools {
        if let Some(image) = image.filter(|i| !leave.allows(i)) {
            let what = format!(" (the pod runs {DEFAULT_TOOLS_IMAGE})");
            refused.push(image_not_allowed(field, image, &what));
            *image = DEFAULT_TOOLS_IMAGE.into();
        }
    }
    d.refused.extend(refused);
    d
}

/// The driver's allow lists applied to the spec (`keep_options`, `keep_images`), given the etcd
/// container of the StatefulSet's template (`None`: no StatefulSet yet). Pure.
pub fn keep_leave(d: Desired, running: Option<&Container>, leave: &Leave) -> Desired {
    let d = keep_options(
        d,
        running.and_then(|c| c.command.as_deref()),
        &leave.options,
    );
    keep_images(d, running.and_then(|c| c.image.as_deref()), &leave.images)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{RestoreSource, validate};

    fn desired(repository: Option<&str>) -> Desired {
        let c = crate::fixtures::cluster("demo")
            .replicas(3)
            .version("3.6.16")
            .spec(|s| s.image_repository = repository.map(Into::into))
            .build();
        validate(&c).unwrap()
    }

    fn operator(prefixes: &[&str]) -> ImageLeave {
        ImageLeave::Prefixes(prefixes.iter().map(|p| p.to_string()).collect())
    }

    #[test]
    fn an_image_is_under_a_prefix_only_on_a_boundary() {
        // (image, prefix, under)
        let table = [
            (
                "gcr.io/etcd-development/etcd",
                "gcr.io/etcd-development/etcd",
                true,
            ),
            (
                "gcr.io/etcd-development/etcd:v3.6.16",
                "gcr.io/etcd-development/etcd",
                true,
            ),
            (
                "gcr.io/etcd-development/etcd@sha256:ab",
                "gcr.io/etcd-development/etcd",
                true,
            ),
            (
                "gcr.io/etcd-development/etcd/sub",
                "gcr.io/etcd-development/etcd",
                true,
            ),
            (
                "gcr.io/etcd-development/etcd-evil",
                "gcr.io/etcd-development/etcd",
                false,
            ),
            ("registry.example/team/etcd", "registry.example/", true),
            ("registry.example.evil/etcd", "registry.example", false),
            ("registry.example.evil/etcd", "registry.example/", false),
            ("anything", "", false),
        ];
        for (image, prefix, want) in table {
            assert_eq!(
                under_prefix(image, prefix),
                want,
                "{image} under {prefix:?}"
            );
        }
        assert!(DEFAULT_TOOLS_IMAGE.starts_with(&format!("{TOOLS_REPOSITORY}:")));
    }

    #[test]
    fn the_operator_allows_the_default_images_and_its_prefixes_alone() {
        let leave = operator(&["registry.example/"]);
        assert!(leave.allows("gcr.io/etcd-development/etcd"));
        assert!(leave.allows(DEFAULT_TOOLS_IMAGE));
        assert!(leave.allows("registry.example/etcd"));
        assert!(!leave.allows("docker.io/attacker/etcd"));
        assert!(!operator(&[]).allows("registry.example/etcd"));
        assert!(ImageLeave::Any.allows("docker.io/attacker/etcd"));
    }

    #[test]
    fn a_foreign_repository_is_replaced_by_the_default_in_a_new_cluster_and_named() {
        let d = keep_images(
            desired(Some("docker.io/attacker/etcd")),
            None,
            &operator(&[]),
        );
        assert_eq!(d.image_repository, DEFAULT_IMAGE_REPOSITORY);
        assert_eq!(d.image, "gcr.io/etcd-development/etcd:v3.6.16");
        assert_eq!(d.refused.len(), 1);
        let e = &d.refused[0];
        assert_eq!(e.field, "spec.imageRepository");
        assert!(
            e.message.contains("\"docker.io/attacker/etcd\"")
                && e.message.contains("--allow-image-prefix PREFIX")
                && e.message
                    .contains("members run gcr.io/etcd-development/etcd"),
            "{}",
            e.message
        );
    }

    #[test]
    fn a_foreign_repository_the_members_run_is_kept_and_one_they_do_not_gives_way_to_theirs() {
        let leave = operator(&[]);
        let kept = keep_images(
            desired(Some("docker.io/other/etcd")),
            Some("docker.io/other/etcd:v3.6.15"),
            &leave,
        );
        assert_eq!(kept.image, "docker.io/other/etcd:v3.6.16");
        assert!(kept.refused[0].message.contains("running members keep it"));
        let theirs = keep_images(
            desired(Some("docker.io/attacker/etcd")),
            Some("gcr.io/etcd-development/etcd:v3.6.16"),
            &leave,
        );
        assert_eq!(theirs.image, "gcr.io/etcd-development/etcd:v3.6.16");
        assert_eq!(theirs.refused.len(), 1);
        let allowed = keep_images(
            desired(Some("registry.example/etcd")),
            None,
            &operator(&["registry.example"]),
        );
        assert_eq!(allowed.image, "registry.example/etcd:v3.6.16");
        assert!(allowed.refused.is_empty(), "{:?}", allowed.refused);
        let cli = keep_images(desired(Some("docker.io/x/etcd")), None, &ImageLeave::Any);
        assert!(cli.refused.is_empty());
    }

    #[test]
    fn a_foreign_tools_image_runs_as_the_default_tools_image_and_is_named() {
        let mut d = desired(None);
        d.restore = Some(RestoreSource {
            url: "s3://b/k.db".into(),
            sha256: None,
            credentials_secret: None,
            tools_image: "docker.io/attacker/tools:1".into(),
            nonce: None,
            encryption: None,
        });
        let d = keep_images(d, None, &operator(&[]));
        assert_eq!(d.restore.as_ref().unwrap().tools_image, DEFAULT_TOOLS_IMAGE);
        assert_eq!(d.refused.len(), 1);
        assert_eq!(d.refused[0].field, "spec.restore.toolsImage");
        assert!(d.refused[0].message.contains("docker.io/attacker/tools:1"));
    }
}
