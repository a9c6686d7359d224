// Package imagetest runs the driftwatch container image that `make image`
// builds, as a platform team would run it: read-only root filesystem,
// uid 65532, no network, every writable path an explicit volume (tmpfs for
// /tmp and HOME), providers from the offline mirror mounted read-only.
// It checks --version, a real `driftwatch audit` of the example inventory
// (real Terraform, real drift, the audit exit code), Terraform git::
// module sources, the non-root user, what the image must not carry
// (compilers, package manager caches), and that SIGTERM to the container
// reaches driftwatch.
//
// TestImageReplicasFailover runs two replicas as the chart's Deployment
// renders them (helm template; the runner block aside: local runs, no
// Lease) on a PostgreSQL store (a pgtest cluster listening on TCP on the
// pods' bridge), each container in a network namespace docker made with
// --network none and the test wires to a bridge of its own (root, ip,
// nsenter, curl), and kills the leader's container: the standby leads,
// records the killed run and checks the workspace again. Then it cuts the
// next leader's network (a node lost: no FIN reaches the server): the
// server's TCP keepalives free the lock and a third replica leads.
//
// The image is $DRIFTWATCH_IMAGE, run with the docker CLI $DRIFTWATCH_DOCKER
// (default docker) against $DOCKER_HOST: `make test` sets them from
// hack/provision-image.sh (our own dockerd under the tools cache). The
// provider mirror is found from $DRIFTWATCH_TF_CLI_CONFIG (make tools),
// helm from $DRIFTWATCH_KUBE_BIN_DIR (make kube-tools), PostgreSQL from
// $DRIFTWATCH_PG_BIN_DIR (make pg-tools). Without them the tests skip, unless DRIFTWATCH_E2E=1 (make test, CI) turns
// that into a failure.
//
// Only tests live here.
package imagetest
