"""The model zoo's models whose libraries cannot be installed here (torchvision's wheel does not import on a
CPU torch), written as their authors write them, tiny: a ResNet, MobileNet/EfficientNet blocks (depthwise
convolutions, squeeze-excitation), the LSTM language model of pytorch/examples with tied weights, DCGAN and
a VAE. Each trains against the CPU step by step with no operator on the fallback, then runs in eval mode
and under inference_mode (test/_zoo.py has the harness). scripts/test.sh runs this file in both kernel
classes."""
import contextlib
import math

import torch
import torch.nn.functional as F
from torch import nn

from _device_helpers import native_only
from _zoo import DEV, LR, StepChecker, assert_close_to_cpu, eval_and_compare, move_keeping_parameters, \
    train_and_compare


def seeded(make):
    torch.manual_seed(0)
    return make()


def image_batches(n, classes, size=16, batch=2):
    g = torch.Generator().manual_seed(1)
    return [(torch.randn(batch, 3, size, size, generator=g), torch.randint(0, classes, (batch,), generator=g))
            for _ in range(n)]


def classification_loss(model, batch):
    return F.cross_entropy(model(batch[0]), batch[1])


# ResNet (torchvision's BasicBlock layout and initialisation).
class BasicBlock(nn.Module):
    def __init__(self, inplanes, planes, stride=1):
        super().__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = None
        if stride != 1 or inplanes != planes:
            self.downsample = nn.Sequential(nn.Conv2d(inplanes, planes, 1, stride, bias=False), nn.BatchNorm2d(planes))

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu(out + identity)


class ResNet(nn.Module):
    def __init__(self, widths=(8, 16), num_classes=5):
        super().__init__()
        self.conv1 = nn.Conv2d(3, widths[0], 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(widths[0])
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        blocks, inplanes = [], widths[0]
        for i, planes in enumerate(widths):
            blocks.append(BasicBlock(inplanes, planes, 1 if i == 0 else 2))
            inplanes = planes
        self.layers = nn.Sequential(*blocks)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(inplanes, num_classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.constant_(m.weight, 1)
                nn.init.constant_(m.bias, 0)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layers(x)
        return self.fc(torch.flatten(self.avgpool(x), 1))


def test_resnet():
    ref = seeded(ResNet)
    batches = image_batches(3, 5, size=32)
    model = train_and_compare(ref, batches, classification_loss)
    eval_and_compare(ref, model, batches[0][0], lambda m, x: m(x))


# MobileNetV2's inverted residual, MobileNetV3's block (hardswish, hard-sigmoid excitation) and EfficientNet's
# MBConv (SiLU, sigmoid excitation): depthwise convolutions and squeeze-excitation.
def make_divisible(v, divisor=8):
    return max(divisor, int(v + divisor / 2) // divisor * divisor)


class SqueezeExcitation(nn.Module):
    def __init__(self, channels, squeeze, activation=nn.ReLU, scale_activation=nn.Sigmoid):
        super().__init__()
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc1 = nn.Conv2d(channels, squeeze, 1)
        self.fc2 = nn.Conv2d(squeeze, channels, 1)
        self.activation = activation()
        self.scale_activation = scale_activation()

    def forward(self, x):
        scale = self.scale_activation(self.fc2(self.activation(self.fc1(self.avgpool(x)))))
        return scale * x


def conv_bn_act(cin, cout, kernel, stride=1, groups=1, activation=nn.ReLU6):
    layers = [nn.Conv2d(cin, cout, kernel, stride, (kernel - 1) // 2, groups=groups, bias=False), nn.BatchNorm2d(cout)]
    if activation is not None:
        layers.append(activation())
    return layers


class InvertedResidual(nn.Module):
    """expand (1x1), depthwise (kxk), optional squeeze-excitation, project (1x1); residual when shapes allow."""

    def __init__(self, cin, cout, expand, kernel=3, stride=1, activation=nn.ReLU6, se=None):
        super().__init__()
        hidden = cin * expand
        self.use_res_connect = stride == 1 and cin == cout
        layers = conv_bn_act(cin, hidden, 1, activation=activation) if expand != 1 else []
        layers += conv_bn_act(hidden, hidden, kernel, stride, groups=hidden, activation=activation)
        if se is not None:
            layers.append(se(hidden))
        layers += conv_bn_act(hidden, cout, 1, activation=None)
        self.block = nn.Sequential(*layers)

    def forward(self, x):
        out = self.block(x)
        return x + out if self.use_res_connect else out


class MobileNetMix(nn.Module):
    def __init__(self, num_classes=5):
        super().__init__()
        efficientnet_se = lambda c: SqueezeExcitation(c, max(1, c // 8), nn.SiLU, nn.Sigmoid)  # noqa: E731
        mobilenetv3_se = lambda c: SqueezeExcitation(c, make_divisible(c // 4), nn.ReLU, nn.Hardsigmoid)  # noqa: E731
        self.features = nn.Sequential(
            *conv_bn_act(3, 8, 3, 2, activation=nn.Hardswish),
            InvertedResidual(8, 8, 1),                                                # MobileNetV2, depthwise only
            InvertedResidual(8, 16, 4, stride=2),                                     # MobileNetV2
            InvertedResidual(16, 16, 4, kernel=5, activation=nn.SiLU, se=efficientnet_se),      # EfficientNet MBConv
            InvertedResidual(16, 24, 3, kernel=5, stride=2, activation=nn.Hardswish, se=mobilenetv3_se),  # V3
            *conv_bn_act(24, 48, 1, activation=nn.Hardswish))
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Sequential(nn.Linear(48, 32), nn.Hardswish(), nn.Linear(32, num_classes))
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out")
                if m.bias is not None:
                    nn.init.zeros_(m.bias)
            elif isinstance(m, nn.Linear):
                nn.init.normal_(m.weight, 0, 0.01 * math.sqrt(48))
                nn.init.zeros_(m.bias)

    def forward(self, x):
        return self.classifier(torch.flatten(self.avgpool(self.features(x)), 1))


def test_mobilenet_and_efficientnet_blocks():
    ref = seeded(MobileNetMix)
    batches = image_batches(3, 5, size=32)
    model = train_and_compare(ref, batches, classification_loss)
    eval_and_compare(ref, model, batches[0][0], lambda m, x: m(x))


# pytorch/examples word_language_model: an LSTM language model with tied encoder/decoder weights, trained by
# truncated backpropagation through time (the hidden state is carried between batches, detached).
class RNNModel(nn.Module):
    def __init__(self, ntoken, ninp, nhid, nlayers, dropout=0.0):
        super().__init__()
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(ntoken, ninp)
        self.rnn = nn.LSTM(ninp, nhid, nlayers, dropout=dropout)
        self.decoder = nn.Linear(nhid, ntoken)
        self.decoder.weight = self.encoder.weight
        self.nhid, self.nlayers = nhid, nlayers
        nn.init.uniform_(self.encoder.weight, -0.1, 0.1)
        nn.init.zeros_(self.decoder.bias)

    def forward(self, input, hidden):
        output, hidden = self.rnn(self.drop(self.encoder(input)), hidden)
        decoded = self.decoder(self.drop(output)).view(-1, self.decoder.out_features)
        return F.log_softmax(decoded, dim=1), hidden

    def init_hidden(self, bsz):
        weight = next(self.parameters())
        return (weight.new_zeros(self.nlayers, bsz, self.nhid), weight.new_zeros(self.nlayers, bsz, self.nhid))


def repackage_hidden(h):
    return h.detach() if isinstance(h, torch.Tensor) else tuple(repackage_hidden(v) for v in h)


def test_lstm_language_model_tied_weights():
    ref = seeded(lambda: RNNModel(ntoken=40, ninp=16, nhid=16, nlayers=2))
    assert ref.decoder.weight is ref.encoder.weight
    stream = torch.randint(0, 40, (3 * 7 + 1, 2), generator=torch.Generator().manual_seed(1))
    batches = [(stream[i:i + 7], stream[i + 1:i + 8].reshape(-1)) for i in range(0, 21, 7)]
    hidden = {}

    def loss(model, batch):
        h = hidden.get(id(model))
        h = model.init_hidden(batch[0].shape[1]) if h is None else repackage_hidden(h)
        output, hidden[id(model)] = model(batch[0], h)
        return F.nll_loss(output, batch[1])

    model = train_and_compare(ref, batches, loss, clip=0.25)
    assert model.decoder.weight is model.encoder.weight
    eval_and_compare(ref, model, batches[0][0], lambda m, x: m(x, m.init_hidden(x.shape[1]))[0])


# pytorch/examples DCGAN (16x16 images), trained as its script does: the discriminator on a real and a
# detached fake batch, then the generator through the discriminator, each with its own optimizer.
class Generator(nn.Module):
    def __init__(self, nz=8, ngf=8, nc=3):
        super().__init__()
        self.main = nn.Sequential(
            nn.ConvTranspose2d(nz, ngf * 2, 4, 1, 0, bias=False), nn.BatchNorm2d(ngf * 2), nn.ReLU(True),
            nn.ConvTranspose2d(ngf * 2, ngf, 4, 2, 1, bias=False), nn.BatchNorm2d(ngf), nn.ReLU(True),
            nn.ConvTranspose2d(ngf, nc, 4, 2, 1, bias=False), nn.Tanh())

    def forward(self, z):
        return self.main(z)


class Discriminator(nn.Module):
    def __init__(self, ndf=8, nc=3):
        super().__init__()
        self.main = nn.Sequential(
            nn.Conv2d(nc, ndf, 4, 2, 1, bias=False), nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf, ndf * 2, 4, 2, 1, bias=False), nn.BatchNorm2d(ndf * 2), nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf * 2, 1, 4, 1, 0, bias=False), nn.Sigmoid())

    def forward(self, x):
        return self.main(x).view(-1, 1).squeeze(1)


def weights_init(m):
    if "Conv" in type(m).__name__:
        nn.init.normal_(m.weight, 0.0, 0.02)
    elif "BatchNorm" in type(m).__name__:
        nn.init.normal_(m.weight, 1.0, 0.02)
        nn.init.zeros_(m.bias)


def discriminator_step(netG, netD, optD, real, noise):
    """The first half of the example's iteration: D on a real batch and on a detached fake one."""
    criterion = nn.BCELoss()
    netD.zero_grad()
    label = torch.full((real.shape[0],), 1.0, device=real.device)
    errD_real = criterion(netD(real), label)
    errD_real.backward()
    fake = netG(noise)
    label.fill_(0.0)
    errD_fake = criterion(netD(fake.detach()), label)
    errD_fake.backward()
    optD.step()
    return errD_real + errD_fake, fake


def generator_step(netG, netD, optG, fake):
    """The second half: G through the updated D, to make D call its fakes real."""
    netG.zero_grad()
    errG = nn.BCELoss()(netD(fake), torch.full((fake.shape[0],), 1.0, device=fake.device))
    errG.backward()
    optG.step()
    return errG


def test_dcgan():
    torch.manual_seed(0)
    refG, refD = Generator().apply(weights_init), Discriminator().apply(weights_init)
    g = torch.Generator().manual_seed(1)
    batches = [(torch.rand(4, 3, 16, 16, generator=g) * 2 - 1, torch.randn(4, 8, 1, 1, generator=g)) for _ in range(3)]
    netG, optG = move_keeping_parameters(refG)
    netD, optD = move_keeping_parameters(refD)
    ref_optG = torch.optim.AdamW(refG.parameters(), lr=LR, weight_decay=0.01)
    ref_optD = torch.optim.AdamW(refD.parameters(), lr=LR, weight_decay=0.01)
    checkG, checkD = StepChecker(refG, netG), StepChecker(refD, netD)
    # The CPU and the device take each half of an iteration in turn, so that each half is compared (and
    # starts) from the same weights; a gradient is compared after the optimizer stepped (which leaves it).
    for step, (real, noise) in enumerate(batches):
        want, ref_fake = discriminator_step(refG, refD, ref_optD, real, noise)
        with native_only():
            got, fake = discriminator_step(netG, netD, optD, real.to(DEV), noise.to(DEV))
            torch.opencl.synchronize()
        assert_close_to_cpu(got, want, f"D loss at step {step}")
        assert_close_to_cpu(fake, ref_fake, f"fakes at step {step}")
        checkD.compare_gradients(f"step {step} (D)")
        checkD.compare_step(f"step {step} (D)")
        want = generator_step(refG, refD, ref_optG, ref_fake)
        with native_only():
            got = generator_step(netG, netD, optG, fake)
            torch.opencl.synchronize()
        assert_close_to_cpu(got, want, f"G loss at step {step}")
        checkG.compare_gradients(f"step {step} (G)")
        checkG.compare_step(f"step {step} (G)")
    eval_and_compare(refG, netG, batches[0][1], lambda m, z: m(z))
    eval_and_compare(refD, netD, batches[0][0], lambda m, x: m(x))


# pytorch/examples VAE (a smaller one): its reparameterisation draws torch.randn_like; the test hands both
# devices the same draw.
class VAE(nn.Module):
    def __init__(self, features=64, hidden=32, latent=8):
        super().__init__()
        self.fc1 = nn.Linear(features, hidden)
        self.fc21 = nn.Linear(hidden, latent)
        self.fc22 = nn.Linear(hidden, latent)
        self.fc3 = nn.Linear(latent, hidden)
        self.fc4 = nn.Linear(hidden, features)
        self.features = features

    def encode(self, x):
        h1 = F.relu(self.fc1(x))
        return self.fc21(h1), self.fc22(h1)

    def reparameterize(self, mu, logvar):
        std = torch.exp(0.5 * logvar)
        eps = torch.randn_like(std)
        return mu + eps * std

    def decode(self, z):
        return torch.sigmoid(self.fc4(F.relu(self.fc3(z))))

    def forward(self, x):
        mu, logvar = self.encode(x.view(-1, self.features))
        z = self.reparameterize(mu, logvar)
        return self.decode(z), mu, logvar


def vae_loss(recon_x, x, mu, logvar, features=64):
    bce = F.binary_cross_entropy(recon_x, x.view(-1, features), reduction="sum")
    kld = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
    return bce + kld


@contextlib.contextmanager
def drawing(eps):
    """torch.randn_like returns eps (on the tensor's device): the same draw on the CPU and on opencl."""
    original = torch.randn_like
    torch.randn_like = lambda t, **kwargs: eps.to(t.device)
    try:
        yield
    finally:
        torch.randn_like = original


def test_vae():
    ref = seeded(VAE)
    g = torch.Generator().manual_seed(1)
    batches = [(torch.rand(4, 1, 8, 8, generator=g), torch.randn(4, 8, generator=g)) for _ in range(3)]

    def loss(model, batch):
        with drawing(batch[1]):
            recon, mu, logvar = model(batch[0])
        return vae_loss(recon, batch[0], mu, logvar)

    model = train_and_compare(ref, batches, loss)

    def forward(model, batch):
        with drawing(batch[1]):
            return model(batch[0])[0]

    eval_and_compare(ref, model, batches[0], forward)
    # Its own draw works on the device too (sampling from the prior, as the example's test loop does).
    with native_only():
        sample = model.decode(torch.randn(16, 8, device=DEV))
    assert sample.device.type == DEV and sample.shape == (16, 64) and bool(((sample > 0) & (sample < 1)).all())
