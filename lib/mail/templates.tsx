/**
 * The messages people get, as React Email components (a well-kept library renders them to HTML that mail clients
 * show, and to plain text): one component per kind of message, sharing one frame. Each takes only what it shows;
 * ./compose-mail.ts reads the data and picks the component. Times are written in UTC and say so.
 */
import { Body } from "@react-email/body";
import { Button } from "@react-email/button";
import { Container } from "@react-email/container";
import { Head } from "@react-email/head";
import { Heading } from "@react-email/heading";
import { Hr } from "@react-email/hr";
import { Html } from "@react-email/html";
import { Preview } from "@react-email/preview";
import { Section } from "@react-email/section";
import { Text } from "@react-email/text";
import type { ReactNode } from "react";

const page = { backgroundColor: "#f6f7f9", fontFamily: "system-ui, -apple-system, 'Segoe UI', sans-serif" };
const card = { backgroundColor: "#ffffff", margin: "24px auto", padding: "24px", maxWidth: "480px" };
const button = {
  backgroundColor: "#1f4fd1",
  color: "#ffffff",
  padding: "12px 20px",
  borderRadius: "6px",
  fontWeight: 600,
  textDecoration: "none",
};
const small = { color: "#555b66", fontSize: "13px" };

/** "2 December 2026, 04:21 UTC": one convention for every message. */
export function utcTime(at: Date): string {
  const date = at.toLocaleDateString("en-GB", { day: "numeric", month: "long", year: "numeric", timeZone: "UTC" });
  const time = at.toLocaleTimeString("en-GB", { hour: "2-digit", minute: "2-digit", timeZone: "UTC" });
  return `${date}, ${time} UTC`;
}

function Frame(props: { preview: string; heading: string; children: ReactNode; footer?: string }) {
  return (
    <Html lang="en">
      <Head />
      <Preview>{props.preview}</Preview>
      <Body style={page}>
        <Container style={card}>
          <Heading as="h1" style={{ fontSize: "20px" }}>
            {props.heading}
          </Heading>
          {props.children}
          <Hr />
          <Text style={small}>
            {props.footer ?? "You get this message because you have a wallet with this address."}
          </Text>
        </Container>
      </Body>
    </Html>
  );
}

/** Sign-up's address check: `url` confirms the address (better-auth's verification link, valid `validHours`). */
export function AddressCheckMail(props: { email: string; url: string; validHours: number }) {
  return (
    <Frame
      preview="Confirm your email address"
      heading="Confirm your email address"
      footer="If you did not create a wallet, ignore this message: nothing happens without the link."
    >
      <Text>Confirm that {props.email} is your address, so that we can reach you about your money.</Text>
      <Section>
        <Button href={props.url} style={button}>
          Confirm my address
        </Button>
      </Section>
      <Text style={small}>The link works for {props.validHours} hours.</Text>
    </Frame>
  );
}

/** "Forgot password": `url` leads to the page that sets a new password (single use, valid `validMinutes`). */
export function PasswordResetMail(props: { url: string; validMinutes: number }) {
  return (
    <Frame
      preview="Choose a new password"
      heading="Reset your password"
      footer="If you did not ask for this, ignore this message: your password stays as it is."
    >
      <Text>Someone (we hope you) asked to reset the password of your wallet.</Text>
      <Section>
        <Button href={props.url} style={button}>
          Choose a new password
        </Button>
      </Section>
      <Text style={small}>The link works once, for {props.validMinutes} minutes.</Text>
    </Frame>
  );
}

/** After a password change or reset: when, and what to do if it was not the owner. */
export function PasswordChangedMail(props: { at: Date; how: "changed" | "reset"; resetUrl: string }) {
  return (
    <Frame preview="Your password was changed" heading="Your password was changed">
      <Text>
        The password of your wallet was {props.how === "reset" ? "reset with a link sent to this address" : "changed"}{" "}
        on {utcTime(props.at)}. Every other device was signed out.
      </Text>
      <Text>If this was not you, choose a new password now: {props.resetUrl}</Text>
    </Frame>
  );
}

/** A sign-in from a device this account never used. `device` is the browser's own description, shortened. */
export function NewDeviceMail(props: { at: Date; device: string; resetUrl: string }) {
  return (
    <Frame preview="A new sign-in to your wallet" heading="A new sign-in to your wallet">
      <Text>
        Your wallet was signed in to from a new device on {utcTime(props.at)}: {props.device}.
      </Text>
      <Text>If this was you, there is nothing to do. If not, choose a new password now: {props.resetUrl}</Text>
    </Frame>
  );
}

/** One line of a receipt. */
export interface ReceiptLine {
  readonly label: string;
  readonly value: string;
}

/** A receipt: what happened to the money, and its page in the wallet (`walletUrl`). `lines` are shown in order. */
export function ReceiptMail(props: { title: string; lines: readonly ReceiptLine[]; walletUrl: string }) {
  return (
    <Frame preview={props.title} heading={props.title}>
      {props.lines.map((line) => (
        <Text key={line.label} style={{ margin: "4px 0" }}>
          <strong>{line.label}:</strong> {line.value}
        </Text>
      ))}
      <Section style={{ marginTop: "16px" }}>
        <Button href={props.walletUrl} style={button}>
          See it in your wallet
        </Button>
      </Section>
    </Frame>
  );
}
