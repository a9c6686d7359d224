// Package imagetest runs the driftwatch container images that `make image`
// builds, one with Terraform and one with OpenTofu (`make image TOOL=tofu`),
// as a platform team would run them: read-only root filesystem, uid 65532,
// no network, every writable path an explicit volume (tmpfs for /tmp and
// HOME), providers from the offline mirror mounted read-only. Every test
// runs against each image (a subtest per tool, eachImage), which must hold
// the tool its io.github.driftwatch.tool label names, of the version its
// io.github.driftwatch.tool.version label says, and not the other one.
// It checks --version, a real `driftwatch audit` of the example inventory
// (the real tool, found by driftwatch's default; real drift, the audit exit
// code), git:: module sources, the non-root user, what the image must not
// carry (compilers, package manager caches), and that SIGTERM to the
// container reaches driftwatch.
//
// TestImageReplicasFailover runs two replicas as the chart's Deployment
// renders them for the image's tool (helm template with image.tool; the
// runner block aside: local runs, no Lease) on a PostgreSQL store (a pgtest
// cluster listening on TCP on the pods' bridge), each container in a
// network namespace docker made with --network none and the test wires to
// a bridge of its own (root, ip, nsenter, curl), and kills the leader's
// container: the standby leads, records the killed run and checks the
// workspace again. Then it cuts the next leader's network (a node lost: no
// FIN reaches the server): the server's TCP keepalives free the lock and a
// third replica leads.
//
// The images are $DRIFTWATCH_IMAGE (Terraform) and $DRIFTWATCH_IMAGE_TOFU
// (OpenTofu), run with the docker CLI $DRIFTWATCH_DOCKER
// (default docker) against $DOCKER_HOST: `make test` sets them from
// hack/provision-image.sh (our own dockerd under the tools cache). The
// provider mirror is found from $DRIFTWATCH_TF_CLI_CONFIG (make tools),
// helm from $DRIFTWATCH_KUBE_BIN_DIR (make kube-tools), PostgreSQL from
// $DRIFTWATCH_PG_BIN_DIR (make pg-tools). Without them the tests skip, unless DRIFTWATCH_E2E=1 (make test, CI) turns
// that into a failure.
//
// Only tests live here.
package imagetest
