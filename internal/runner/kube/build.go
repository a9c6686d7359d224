package kube

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"

	"github.com/driftwatch/driftwatch/internal/runner/remote"
	"github.com/driftwatch/driftwatch/internal/terraform"
)

// Labels and annotations on run Jobs, their pods and Secrets. Label values
// are made valid (labelValue); the annotations hold the exact names.
const (
	LabelManagedBy  = "app.kubernetes.io/managed-by"
	ManagedBy       = "driftwatch"
	LabelName       = "app.kubernetes.io/name"
	LabelComponent  = "app.kubernetes.io/component"
	ComponentRunner = "runner"
	LabelWorkspace  = "driftwatch.io/workspace"
	LabelRunID      = "driftwatch.io/run-id"
	// LabelKind says what a run Job does: KindDetect (a plan) or
	// KindRemediate (an apply of an approved change set). A Job without it
	// (an older build's) is a detection.
	LabelKind     = "driftwatch.io/kind"
	KindDetect    = "detect"
	KindRemediate = "remediate"

	AnnotationWorkspace = "driftwatch.io/workspace"
	AnnotationRunID     = "driftwatch.io/run-id"
	// AnnotationTokenHash is the hex SHA-256 of the run's result token (the
	// token itself is only in the run Secret): what a restarted daemon needs
	// to accept the result of a Job it adopts.
	AnnotationTokenHash = "driftwatch.io/token-sha256"
	// AnnotationExpiresAt is when the daemon stops accepting the result
	// (RFC 3339).
	AnnotationExpiresAt = "driftwatch.io/expires-at"
)

// Paths inside a run pod.
const (
	// ContainerName is the runner container: Terraform, and no token.
	ContainerName = "runner"
	// ReporterContainerName is the reporter container: the only one that
	// mounts the token; it delivers the runner's result.
	ReporterContainerName = "reporter"
	// RunDir holds the spec (both containers).
	RunDir   = "/etc/driftwatch/run"
	SpecPath = RunDir + "/spec.json"
	// TokenDir holds the result token (the reporter container only).
	TokenDir  = "/etc/driftwatch/token"
	TokenPath = TokenDir + "/token"
	// HandoffDir is the emptyDir the two containers share; the reporter
	// listens on HandoffSocket, and the runner hands its result over it.
	HandoffDir    = "/run/driftwatch-handoff"
	HandoffSocket = HandoffDir + "/reporter.sock"
	// SecretsDir holds one file per secret env name (named after it) and
	// GitCredentialsFile.
	SecretsDir         = "/etc/driftwatch/secrets"
	GitCredentialsFile = SecretsDir + "/git-credentials" // '-' cannot clash with an env name
	WorkDir            = "/work"
	TmpDir             = "/tmp"

	// RunAsUser is the runner container's uid and gid, and the pod's
	// fsGroup: distroless' "nonroot", and the driftwatch image's user.
	RunAsUser = 65532
	// ReporterUser is the reporter container's uid and gid: not
	// Terraform's, so that no process of the run can signal or trace it
	// (were the PID namespace ever shared).
	ReporterUser = 65533

	secretKeySpec  = "spec.json"
	secretKeyToken = "token"
	// secretFileMode is readable by the pod's fsGroup only.
	secretFileMode = 0o440
	// tokenFileMode is what the token item asks for; the kubelet adds
	// group read for the fsGroup (see the package doc): the token is kept
	// from the runner container by not mounting it there.
	tokenFileMode = 0o400
	// deliverySlack is how long after the Job's deadline a result is still
	// accepted: the pod may post just before it is killed.
	deliverySlack = time.Minute
	maxNameLen    = validation.DNS1123LabelMaxLength // the job-name label caps Job names at 63
)

// reporterResources are the reporter container's requests and limits: it
// holds one result (a parsed plan, at most remote.DefaultMaxBodyBytes)
// and posts it.
var reporterResources = Resources{
	Requests: map[string]string{"cpu": "10m", "memory": "32Mi"},
	Limits:   map[string]string{"cpu": "500m", "memory": "256Mi", "ephemeral-storage": "64Mi"},
}

// runPlan is everything decided about a run before any API call.
type runPlan struct {
	name      string
	spec      remote.Spec
	mounts    []secretMount // sorted by file
	resources Resources
	// deadline is the Job's activeDeadlineSeconds.
	deadline time.Duration
}

// secretMount is one file under SecretsDir, projected from a Secret key.
type secretMount struct {
	file string // relative to SecretsDir
	ref  SecretKeyRef
}

// JobName is the deterministic name of runID's Job (and its Secret):
// driftwatch-<workspace>-<10 hex digits of the run id's SHA-256>, at most
// 63 characters. One run, one name: creating a run twice fails with
// AlreadyExists instead of starting a second Job.
func JobName(workspace, runID string) string {
	sum := sha256.Sum256([]byte(runID))
	suffix := hex.EncodeToString(sum[:])[:10]
	const prefix = "driftwatch-"
	ws := dnsPart(workspace, maxNameLen-len(prefix)-1-len(suffix))
	if ws == "" {
		return prefix + suffix
	}
	return prefix + ws + "-" + suffix
}

// dnsPart lowercases s, turns anything but [a-z0-9] into '-', squeezes and
// trims dashes, and cuts it to n characters.
func dnsPart(s string, n int) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
			dash = false
		} else if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
	}
	out := b.String()
	if len(out) > n {
		out = out[:n]
	}
	return strings.TrimRight(out, "-")
}

// labelValue returns s if it is a valid label value, else a valid one that
// still tells different names apart (a readable prefix plus a hash).
func labelValue(s string) string {
	if len(validation.IsValidLabelValue(s)) == 0 {
		return s
	}
	sum := sha256.Sum256([]byte(s))
	h := hex.EncodeToString(sum[:])[:10]
	var b strings.Builder
	for _, r := range s {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.' {
			b.WriteRune(r)
		} else {
			b.WriteByte('-')
		}
	}
	p := b.String()
	if len(p) > 52 {
		p = p[:52]
	}
	p = strings.TrimFunc(p, func(r rune) bool { return r == '-' || r == '_' || r == '.' })
	if p == "" {
		return h
	}
	return p + "-" + h
}

// ManagedSelector selects everything the Kubernetes runner creates.
func ManagedSelector() string { return LabelManagedBy + "=" + ManagedBy }

// WorkspaceSelector selects the runs of one workspace.
func WorkspaceSelector(workspace string) string {
	return ManagedSelector() + "," + LabelWorkspace + "=" + labelValue(workspace)
}

func runLabels(spec remote.Spec) map[string]string {
	return map[string]string{
		LabelManagedBy: ManagedBy,
		LabelName:      "driftwatch",
		LabelComponent: ComponentRunner,
		LabelWorkspace: labelValue(spec.Workspace),
		LabelRunID:     labelValue(spec.RunID),
		LabelKind:      specKind(spec),
	}
}

// specKind is the LabelKind of a spec's Job.
func specKind(spec remote.Spec) string {
	if spec.Remediation != nil {
		return KindRemediate
	}
	return KindDetect
}

// jobKind is the LabelKind of a Job (KindDetect if it has none).
func jobKind(j *batchv1.Job) string {
	if j.Labels[LabelKind] == KindRemediate {
		return KindRemediate
	}
	return KindDetect
}

// remediate makes p a remediation run of rem: its pod applies instead of
// detecting, and asks the daemon's proceed check right before the apply.
func (p *runPlan) remediate(cfg Config, rem *remote.Remediation) {
	p.spec.Remediation = rem
	p.spec.ProceedURL = strings.TrimRight(cfg.CallbackURL, "/") + remote.ProceedPath(p.spec.RunID)
}

// prepare maps a request onto the pod: which Secret keys are mounted where,
// the spec the pod runs, its deadline. It is pure.
func prepare(cfg Config, req terraform.Request, now time.Time) (runPlan, error) {
	if req.RunID == "" || req.Workspace == "" {
		return runPlan{}, fmt.Errorf("run id and workspace are required")
	}
	if (req.Source.Path == "") == (req.Source.Git == nil) {
		return runPlan{}, fmt.Errorf("workspace %q: exactly one of a path and a git source is required", req.Workspace)
	}
	ws := cfg.Workspaces[req.Workspace]
	var missing []string
	for name := range req.SecretEnvFiles {
		if _, ok := ws.SecretEnv[name]; !ok {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return runPlan{}, fmt.Errorf("workspace %q: secret env %s has no Kubernetes Secret key "+
			"(map it in the kubernetes runner's workspaces.%s.secret_env: run pods get credentials only as mounted Secret keys)",
			req.Workspace, strings.Join(missing, ", "), req.Workspace)
	}

	p := runPlan{name: JobName(req.Workspace, req.RunID), resources: cfg.Resources.Merge(ws.Resources)}
	timeout := req.Timeout
	if timeout <= 0 {
		timeout = cfg.DefaultTimeout
	}
	grace := req.KillGrace
	if grace <= 0 {
		grace = DefaultKillGrace
	}
	p.deadline = (timeout + grace + cfg.StartupAllowance).Round(time.Second)

	secretEnv := map[string]string{}
	for _, name := range sortedKeys(ws.SecretEnv) {
		p.mounts = append(p.mounts, secretMount{file: name, ref: ws.SecretEnv[name]})
		secretEnv[name] = SecretsDir + "/" + name
	}
	spec := remote.Spec{
		Version:        remote.Version,
		RunID:          req.RunID,
		Workspace:      req.Workspace,
		Binary:         req.Binary,
		Source:         remote.Source{Path: req.Source.Path},
		TFWorkspace:    req.TFWorkspace,
		VarFiles:       req.VarFiles,
		Vars:           req.Vars,
		Env:            req.Env,
		BackendConfig:  req.BackendConfig,
		Timeout:        remote.Duration(timeout),
		KillGrace:      remote.Duration(grace),
		CLIConfigFile:  cfg.CLIConfigFile,
		WorkDir:        WorkDir,
		GitCacheDir:    WorkDir + "/git",
		CallbackURL:    strings.TrimRight(cfg.CallbackURL, "/") + remote.ResultPath(req.RunID),
		LogURL:         strings.TrimRight(cfg.CallbackURL, "/") + remote.LogPath(req.RunID),
		CallbackCA:     cfg.CallbackCA,
		TokenFile:      TokenPath,
		ExpiresAt:      now.Add(p.deadline + deliverySlack).UTC().Truncate(time.Second),
		SecretEnvFiles: secretEnv,
		NoFastPaths:    req.NoFastPaths,
		Query:          req.Query,
	}
	if len(secretEnv) == 0 {
		spec.SecretEnvFiles = nil
	}
	if req.Backend.Enabled {
		// The pod runs the hygiene checks (the bucket policy is read with
		// the workspace's own credentials, which only the pod has).
		b := req.Backend
		spec.Backend = &b
	}
	if g := req.Source.Git; g != nil {
		spec.Source.Git = &remote.Git{URL: g.URL, Ref: g.Ref, Path: g.Path}
		switch {
		case ws.GitCredentials != nil:
			p.mounts = append(p.mounts, secretMount{file: "git-credentials", ref: *ws.GitCredentials})
			spec.Source.Git.CredentialsFile = GitCredentialsFile
		case g.CredentialsFile != "":
			return runPlan{}, fmt.Errorf("workspace %q: the git source has a credentials file but no Kubernetes Secret key "+
				"(set the kubernetes runner's workspaces.%s.git_credentials)", req.Workspace, req.Workspace)
		}
	}
	sort.Slice(p.mounts, func(i, j int) bool { return p.mounts[i].file < p.mounts[j].file })
	p.spec = spec
	return p, nil
}

// buildJob is the run's Job: pure, from the configuration (with defaults),
// the plan and the token's hash.
func buildJob(cfg Config, p runPlan, tokenHash [32]byte) *batchv1.Job {
	labels := runLabels(p.spec)
	podLabels := runLabels(p.spec)
	annotations := map[string]string{
		AnnotationWorkspace: p.spec.Workspace,
		AnnotationRunID:     p.spec.RunID,
		AnnotationTokenHash: remote.FormatHash(tokenHash),
		AnnotationExpiresAt: p.spec.ExpiresAt.Format(time.RFC3339),
	}

	volumes := []corev1.Volume{
		// The spec only: the token is another volume of the same Secret.
		{Name: "run", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
			SecretName:  p.name,
			Items:       []corev1.KeyToPath{{Key: secretKeySpec, Path: secretKeySpec}},
			DefaultMode: ptr.To[int32](secretFileMode),
		}}},
		// Mounted in the reporter container only.
		{Name: "token", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
			SecretName:  p.name,
			Items:       []corev1.KeyToPath{{Key: secretKeyToken, Path: secretKeyToken, Mode: ptr.To[int32](tokenFileMode)}},
			DefaultMode: ptr.To[int32](tokenFileMode),
		}}},
		{Name: "handoff", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{
			Medium: corev1.StorageMediumMemory, SizeLimit: ptr.To(resource.MustParse("1Mi")),
		}}},
		{Name: "work", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
	}
	// The runner container: no token.
	mounts := []corev1.VolumeMount{
		{Name: "run", MountPath: RunDir, ReadOnly: true},
		{Name: "handoff", MountPath: HandoffDir},
		{Name: "work", MountPath: WorkDir},
		{Name: "tmp", MountPath: TmpDir},
	}
	reporterMounts := []corev1.VolumeMount{
		{Name: "run", MountPath: RunDir, ReadOnly: true},
		{Name: "token", MountPath: TokenDir, ReadOnly: true},
		{Name: "handoff", MountPath: HandoffDir},
	}
	if len(p.mounts) > 0 {
		// One projected volume, one file per key: only the keys the run
		// needs are visible, never the whole Secret.
		var sources []corev1.VolumeProjection
		for _, m := range p.mounts {
			sources = append(sources, corev1.VolumeProjection{Secret: &corev1.SecretProjection{
				LocalObjectReference: corev1.LocalObjectReference{Name: m.ref.Name},
				Items:                []corev1.KeyToPath{{Key: m.ref.Key, Path: m.file}},
			}})
		}
		volumes = append(volumes, corev1.Volume{Name: "credentials", VolumeSource: corev1.VolumeSource{
			Projected: &corev1.ProjectedVolumeSource{Sources: sources, DefaultMode: ptr.To[int32](secretFileMode)},
		}})
		mounts = append(mounts, corev1.VolumeMount{Name: "credentials", MountPath: SecretsDir, ReadOnly: true})
	}

	var pullSecrets []corev1.LocalObjectReference
	for _, s := range cfg.ImagePullSecrets {
		pullSecrets = append(pullSecrets, corev1.LocalObjectReference{Name: s})
	}
	command := append(append([]string{}, cfg.Command...), "runner", "--spec", SpecPath, "--socket", HandoffSocket)
	reporterCommand := append(append([]string{}, cfg.Command...), "runner", "report", "--spec", SpecPath, "--socket", HandoffSocket)

	return &batchv1.Job{
		TypeMeta: metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: metav1.ObjectMeta{
			Name:        p.name,
			Namespace:   cfg.Namespace,
			Labels:      labels,
			Annotations: annotations,
		},
		Spec: batchv1.JobSpec{
			// The run's own timeout stops Terraform first (and its result,
			// an error, is still delivered); this is the hard stop.
			ActiveDeadlineSeconds: ptr.To(int64(math.Ceil(p.deadline.Seconds()))),
			// A run is never retried by Kubernetes: the next scheduled run
			// is the retry, and a failed plan is a result, not a crash.
			BackoffLimit: ptr.To[int32](0),
			PodFailurePolicy: &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{
				// A pod evicted or preempted (node drain) did nothing wrong:
				// replace it without counting a failure. First, so that its
				// exit code (137) does not match the next rule.
				{Action: batchv1.PodFailurePolicyActionIgnore, OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{
					{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue},
				}},
				// Any non-zero exit of either container fails the Job at
				// once (the reporter's: the result was not delivered, or
				// the daemon holds another one).
				{Action: batchv1.PodFailurePolicyActionFailJob, OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{
					Operator: batchv1.PodFailurePolicyOnExitCodesOpNotIn,
					Values:   []int32{0},
				}},
			}},
			TTLSecondsAfterFinished: ptr.To(int32(math.Ceil(cfg.TTLAfterFinished.Seconds()))),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: podLabels, Annotations: map[string]string{
					AnnotationWorkspace: p.spec.Workspace,
					AnnotationRunID:     p.spec.RunID,
				}},
				Spec: corev1.PodSpec{
					RestartPolicy:                corev1.RestartPolicyNever,
					ServiceAccountName:           cfg.ServiceAccount,
					AutomountServiceAccountToken: ptr.To(false),
					// No service environment variables: the run's environment
					// is what the workspace declares.
					EnableServiceLinks: ptr.To(false),
					ImagePullSecrets:   pullSecrets,
					SecurityContext: &corev1.PodSecurityContext{
						RunAsNonRoot: ptr.To(true),
						RunAsUser:    ptr.To[int64](RunAsUser),
						RunAsGroup:   ptr.To[int64](RunAsUser),
						// Secret files are 0440 owned by this group, which
						// both containers have: the token is kept from the
						// runner container by its mounts, not by this.
						FSGroup:        ptr.To[int64](RunAsUser),
						SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
					},
					// The default, spelled out: with a shared process
					// namespace the runner's processes could reach the
					// reporter's files through /proc/PID/root.
					ShareProcessNamespace: ptr.To(false),
					Containers: []corev1.Container{{
						Name:            ContainerName,
						Image:           cfg.Image,
						ImagePullPolicy: cfg.ImagePullPolicy,
						Command:         command,
						Env: []corev1.EnvVar{
							{Name: "HOME", Value: TmpDir},
							{Name: "TMPDIR", Value: TmpDir},
						},
						Resources:    requirements(p.resources),
						VolumeMounts: mounts,
						// The result travels over HTTP; the termination
						// message only explains a pod that could not deliver.
						TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
						SecurityContext:          containerSecurity(RunAsUser),
					}, {
						Name:                     ReporterContainerName,
						Image:                    cfg.Image,
						ImagePullPolicy:          cfg.ImagePullPolicy,
						Command:                  reporterCommand,
						Resources:                requirements(reporterResources),
						VolumeMounts:             reporterMounts,
						TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
						SecurityContext:          containerSecurity(ReporterUser),
					}},
					Volumes: volumes,
				},
			},
		},
	}
}

// containerSecurity is a run pod container's sandbox, as uid and gid uid.
func containerSecurity(uid int64) *corev1.SecurityContext {
	return &corev1.SecurityContext{
		RunAsNonRoot:             ptr.To(true),
		RunAsUser:                ptr.To(uid),
		RunAsGroup:               ptr.To(uid),
		ReadOnlyRootFilesystem:   ptr.To(true),
		AllowPrivilegeEscalation: ptr.To(false),
		Privileged:               ptr.To(false),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}

// buildSecret is the run's Secret: the spec and the token, owned by the Job
// (created first, so its UID is known) and so deleted with it.
func buildSecret(job *batchv1.Job, spec remote.Spec, token string) (*corev1.Secret, error) {
	b, err := spec.Encode()
	if err != nil {
		return nil, err
	}
	return &corev1.Secret{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      job.Name,
			Namespace: job.Namespace,
			Labels:    runLabels(spec),
			Annotations: map[string]string{
				AnnotationWorkspace: spec.Workspace,
				AnnotationRunID:     spec.RunID,
			},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "batch/v1",
				Kind:       "Job",
				Name:       job.Name,
				UID:        job.UID,
				// No blockOwnerDeletion: it would need update on
				// jobs/finalizers, and nothing waits for the Secret.
			}},
		},
		Type:      corev1.SecretTypeOpaque,
		Immutable: ptr.To(true),
		Data: map[string][]byte{
			secretKeySpec:  b,
			secretKeyToken: []byte(token),
		},
	}, nil
}
